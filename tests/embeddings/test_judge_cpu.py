"""The judge gives the same vectors on every CPU (issue 40).

onnxruntime's u8 x s8 matrix product on x86 without VNNI adds pairs of products into a saturating
int16, while VNNI, AMX and Arm add them exactly: with full 8-bit weights the shipped judge's
vectors agreed across the two only to cosine 0.979, and the docs' near-tied examples came out in
another order on another machine. The judge is quantised with 7-bit weights (``reduce_range``),
so every kernel computes the same integers. These vectors were recorded once
(``python tests/embeddings/test_judge_cpu.py``); any CPU whose judge disagrees fails here.

Measured against them: this AVX2 EPYC and Haswell under qemu-x86_64 give every text at cosine
≥ 0.99999; a Cortex-A72 under qemu-aarch64 (bench/arm-check.sh) gives 18 of the 20 so, and two
at 0.9986 and 0.9934 (one pass's dynamic activation scale rounding another way, or the
emulation's own arithmetic: not known), with every order below the same. So the test asks what
the saturating path cannot meet (its vectors were off everywhere, median well under 0.9999; worst
0.979) and what the answers need: the same orders between texts that are not near-tied."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from memkit.embeddings.judge import Judge, judge_folder, judge_status

REFERENCE = Path(__file__).with_name("judge_reference.npy")
MEDIAN_COSINE = 0.9999  #: the typical text: the same vector
MIN_COSINE = 0.99  #: the worst text (the saturating path with 8-bit weights: 0.979)
ORDER_GAP = 0.01  #: two texts' recorded cosines to a query this far apart keep their order
QUERIES = [1, 3, 5, 6, 7, 13, 15, 17]  #: the questions among TEXTS; the others are notes

TEXTS = [
    "Sister Ana lives in Porto with her husband and their twins",
    "which city is my sibling in",
    "Allergic to shellfish: prawns and mussels give me hives",
    "should I order the shrimp pasta?",
    "Got a 2019 Mazda 3 last spring",
    "what do I drive?",
    "paella rice",
    "christmas menu",
    "Prefers bomba rice for paella; Calasparra is the fallback when bomba is sold out",
    "Hosted a paella night for 8 colleagues on 2026-03-14, using two pans and 750 g of rice",
    "The socarrat forms in the last 90 seconds on high heat",
    "Quarterly VAT return is due on 7 May.",
    "Pi 5 8GB board node-3 runs Home Assistant 2026.10 on bare-metal HA OS",
    "zzzqqq xylophone",
    "Peanut allergy: carries an EpiPen everywhere",
    "Can you suggest a Thai dish I could order tonight?",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "hi",
    "Router is a MikroTik hAP ax3 running RouterOS 7.16",
    "Rice-to-broth ratio for bomba paella is 1:3 by volume; Calasparra needs closer to 1:3.5 " * 6,
]


def _judge() -> Judge:
    folder = judge_folder()
    assert folder is not None
    return Judge(folder)


@pytest.mark.skipif(judge_status() is not None, reason=f"the judge cannot run here: {judge_status()}")
def test_the_judge_gives_the_recorded_vectors_on_this_cpu():
    got = _judge().embed(TEXTS)
    want = np.load(REFERENCE).astype(np.float32)
    assert want.shape == got.shape
    cosines = (got * want).sum(1) / np.linalg.norm(want, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= MIN_COSINE, (f"the judge's vector of {TEXTS[worst]!r} differs from the recorded "
                                         f"one on this CPU (cosine {cosines[worst]:.4f})")
    assert float(np.median(cosines)) >= MEDIAN_COSINE, f"the judge's vectors differ on this CPU: {cosines.round(5)}"
    notes = [i for i in range(len(TEXTS)) if i not in QUERIES]
    for q in QUERIES:
        mine, recorded = got[notes] @ got[q], want[notes] @ want[q]
        apart = np.abs(recorded[:, None] - recorded[None, :]) >= ORDER_GAP
        flipped = apart & (np.sign(mine[:, None] - mine[None, :]) != np.sign(recorded[:, None] - recorded[None, :]))
        assert not flipped.any(), f"the notes' order for {TEXTS[q]!r} differs on this CPU"


if __name__ == "__main__":  # record the reference (after `make judge`)
    np.save(REFERENCE, _judge().embed(TEXTS).astype(np.float32))
    print(f"wrote {REFERENCE}", file=sys.stderr)
