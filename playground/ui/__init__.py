"""The Gradio app. Gradio reads GRADIO_ANALYTICS_ENABLED when it is first imported: nothing is sent
home unless asked for (launch.py --analytics)."""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
