"""The claims of the lecture notes reproduced here: what is claimed (our words), what the paper
published, and how our runs are judged (playground.reproduce.judges)."""
from __future__ import annotations

from playground.reproduce import judges as j
from playground.reproduce.base import ChartSpec, Claim

BOTTLENECK = Claim(
    name="bottleneck",
    title="Attention removes the fixed-size bottleneck",
    claim="An encoder-decoder without attention squeezes the whole source into one vector, so its "
          "translations get worse as sources get longer; with attention the decoder looks back at every "
          "source word and accuracy stays about level.",
    paper="Bahdanau et al. (Fig. 2, WMT'14 En→Fr): BLEU of the no-attention RNNencdec-50 drops steadily as "
          "sentences pass about 20 words, while RNNsearch-50 (attention) stays nearly level out to 50+ words; "
          "over all sentences 17.82 vs 26.75 BLEU (Table 1).",
    citation="Bahdanau, Cho, Bengio. Neural Machine Translation by Jointly Learning to Align and Translate. "
             "ICLR 2015, arXiv:1409.0473.",
    summarise=j.bottleneck_numbers, judge=j.bottleneck_verdict, tabulate=j.bottleneck_table,
    chart_data=j.bottleneck_chart,
    chart=ChartSpec("source length (words, bucket start)", "words translated right (%)"),
    extra="by_length",
    note="Reduced recipe: the toy translation task with sources of 3 to 40 words (not 60), 8,000 pairs "
         "(not 20,000) and 400 steps (not 2,000), so both runs fit the time budget. In place of BLEU we count "
         "target words predicted right (token accuracy, greedy decoding); whole-sentence exact match is in the "
         "table, but after so short a training it falls with length for both models, since every word's "
         "small error compounds over a long sentence.",
)

POSITIONS = Claim(
    name="pe_extrapolation",
    title="Position encodings past the training length",
    claim="A learned position table has nothing for positions it never saw, while sinusoidal, RoPE and ALiBi "
          "encodings are formulas that go on past the training length and keep the model working there.",
    paper="Vaswani et al. (Table 3, row E): a learned table does as well as sinusoids at the trained lengths (4.92 perplexity for both, "
          "25.7 vs 25.8 BLEU); they chose sinusoids hoping they extrapolate. Press et al. (Fig. 1) later measured "
          "it: past the training length sinusoidal perplexity blows up within a few dozen tokens, rotary "
          "degrades more slowly, ALiBi stays flat out to many times the training length.",
    citation="Vaswani et al. Attention Is All You Need. NeurIPS 2017, arXiv:1706.03762, §3.5 and Table 3. "
             "Press, Smith, Lewis. Train Short, Test Long (ALiBi). ICLR 2022, arXiv:2108.12409.",
    summarise=j.positions_numbers, judge=j.positions_verdict, tabulate=j.positions_table,
    chart_data=j.positions_chart,
    chart=ChartSpec("position in the sequence", "validation loss (nats)", rule=32, rule_label="trained length"),
    extra="positions",
    note="Character model on Tiny Shakespeare (2 layers, d_model 64, 600 steps) trained on 32-character windows "
         "and evaluated on 128-character ones (64 validation windows; 4 positions per point in the chart). "
         "Token embeddings are scaled by √d_model as in the Transformer paper: without that a sinusoidal "
         "table, about 35 times larger than the embeddings at the start (norm √(d/2) ≈ 5.7 against "
         "0.02·√d ≈ 0.16), drowns them and the model stays at letter frequencies. The notes credit the "
         "collapse of learned tables to Vaswani's ablation and say sinusoids extrapolate: that paper tested "
         "neither past the trained lengths, and Press et al. measured sinusoids failing there.",
)

WARMUP = Claim(
    name="warmup",
    title="Post-LN needs warm-up, pre-LN does not",
    claim="With the norm after the residual sum (post-LN), the first large Adam steps derail training unless "
          "the learning rate ramps up; with the norm inside the branch (pre-LN) the same model trains without warm-up.",
    paper="Xiong et al. (IWSLT'14 De→En and BERT pre-training): post-LN trained with Adam but no warm-up ends far "
          "below the same model with warm-up, and its result depends on the warm-up length; pre-LN trains "
          "without warm-up and reaches comparable results sooner.",
    citation="Xiong et al. On Layer Normalization in the Transformer Architecture. ICML 2020, arXiv:2002.04745.",
    summarise=j.warmup_numbers, judge=j.warmup_verdict, tabulate=j.warmup_table, chart_data=j.curve_frame,
    chart=ChartSpec("step", "validation loss (nats)"),
    note="6-layer character model on Tiny Shakespeare (d_model 64, 600 steps), Adam at lr 2e-3 held constant after "
         "the warm-up, no gradient clipping. A loss stuck near 3.3 nats is a model that learned only letter frequencies.",
)

SCALE = Claim(
    name="sqrt_dk",
    title="Why divide by √d_k",
    claim="Dot products of d_k-dimensional queries and keys grow with d_k, so without the 1/√d_k factor the "
          "softmax saturates and learns worse, the more so the larger the heads.",
    paper="Vaswani et al. §3.2.1: for unit-variance entries q·k has variance d_k; for large d_k the unscaled "
          "products push softmax into regions of tiny gradients, which is why they scale by 1/√d_k (citing "
          "Britz et al.: additive attention beat unscaled dot products at large d_k). No table: an argument.",
    citation="Vaswani et al. Attention Is All You Need. NeurIPS 2017, arXiv:1706.03762, §3.2.1.",
    summarise=j.scale_numbers, judge=j.scale_verdict, tabulate=j.scale_table, chart_data=j.final_by_group_chart,
    chart=ChartSpec("head size d_k", "final validation loss (nats)", mark="bar", x_ordinal=True),
    note="Character model on Tiny Shakespeare, d_model 128, 2 layers, 300 steps; 8, 2 or 1 heads so that d_k is 16, "
         "64 or 128. Weights are drawn with std 1/√d_model ≈ 0.088 (model.init_std) so that queries and keys start "
         "with unit-variance entries, as the paper's argument assumes. With GPT-2's std 0.02 the unscaled scores "
         "start small, and in our trials unscaled attention then ended 0.05 to 0.1 nats lower at every d_k.",
)

SMOOTHING = Claim(
    name="label_smoothing",
    title="Label smoothing: worse perplexity, accuracy kept",
    claim="Training towards a target that keeps a little probability for every other token makes the model "
          "less sure, which raises perplexity, but it does not cost (and can help) accuracy.",
    paper="Vaswani et al. §5.4 and Table 3 (row D): ε_ls = 0 gives 4.67 perplexity and 25.3 BLEU, the base "
          "ε_ls = 0.1 gives 4.92 and 25.8 (ε_ls = 0.2: 5.47 and 25.7).",
    citation="Vaswani et al. Attention Is All You Need. NeurIPS 2017, arXiv:1706.03762, §5.4 and Table 3. "
             "Szegedy et al. Rethinking the Inception Architecture. CVPR 2016, arXiv:1512.00567.",
    summarise=j.smoothing_numbers, judge=j.smoothing_verdict, tabulate=j.smoothing_table, chart_data=j.curve_frame,
    chart=ChartSpec("step", "validation loss (nats, unsmoothed)"),
    note="Dates in many formats to ISO 8601 with the GRU encoder-decoder with Bahdanau attention (8,000 pairs, "
         "300 steps instead of 20,000 and 2,000): label smoothing is a property of the loss, not of the "
         "architecture, and the small Transformer preset needs far more than 300 steps to learn this task. "
         "Perplexity is exp of the unsmoothed validation loss; exact match counts whole dates right.",
)

RESIDUAL = Claim(
    name="residual",
    title="Residual connections let deep stacks train",
    claim="Without skip connections every layer must pass the signal on by itself, and a deep stack trains "
          "much worse than a shallow one; with them depth helps or at least does not hurt.",
    paper="He et al. (Fig. 1 and Table 6, CIFAR-10): a 56-layer plain network has higher training and test error than a "
          "20-layer one; with residual connections the deeper network is the better one (6.97% vs 8.75% test "
          "error for ResNet-56 vs ResNet-20). The notes add that transformers without residuals stop training "
          "past about 10 layers.",
    citation="He, Zhang, Ren, Sun. Deep Residual Learning for Image Recognition. CVPR 2016, arXiv:1512.03385.",
    summarise=j.residual_numbers, judge=j.residual_verdict, tabulate=j.residual_table, chart_data=j.curve_frame,
    chart=ChartSpec("step", "validation loss (nats)"),
    note="Character model on Tiny Shakespeare (pre-LN, d_model 64, 400 steps) with 2 and 8 layers, model.residual on or off.",
)

HEADS = Claim(
    name="heads",
    title="One head vs several at the same width",
    claim="Splitting the same d_model into several smaller heads lets a layer attend to several things at "
          "once; a single head of full width does worse.",
    paper="Vaswani et al. (Table 3, rows A, d_model 512): 1 head 5.29 perplexity and 24.9 BLEU; 4 heads 5.00 "
          "and 25.5; 8 heads (base) 4.92 and 25.8; 16 heads 4.91 and 25.8; 32 heads 5.01 and 25.4: one head is "
          "0.9 BLEU below the best, and too many heads also lose a little.",
    citation="Vaswani et al. Attention Is All You Need. NeurIPS 2017, arXiv:1706.03762, Table 3.",
    summarise=j.heads_numbers, judge=j.heads_verdict, tabulate=j.heads_table,
    chart_data=j.heads_chart,
    chart=ChartSpec("heads", "final validation loss (nats)", mark="bar", x_ordinal=True),
    note="Character model on Tiny Shakespeare, d_model 64, 2 layers, 500 steps; only the number of heads changes. "
         "The 4-head run is repeated with two more seeds: their spread is the noise a difference must clear.",
)

CLAIMS: tuple[Claim, ...] = (BOTTLENECK, POSITIONS, WARMUP, SCALE, SMOOTHING, RESIDUAL, HEADS)
