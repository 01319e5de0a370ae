"""Altair chart builders: DataFrame in, Chart out (pure, testable). One module per area."""
