"""The judge gives the same vectors on every CPU (issue 40).

onnxruntime's u8 x s8 matrix product on x86 without VNNI adds pairs of products into a saturating
int16, while VNNI, AMX and Arm add them exactly: with full 8-bit weights the shipped judge's
vectors agreed across the two only to cosine 0.979, and the docs' near-tied examples came out in
another order on another machine. The judge is quantised with 7-bit weights (``reduce_range``),
so every kernel computes the same integers. These vectors were recorded once
(``python tests/embeddings/test_judge_cpu.py``); any CPU whose judge disagrees fails here."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from memkit.embeddings.judge import Judge, judge_folder, judge_status

REFERENCE = Path(__file__).with_name("judge_reference.npy")
MIN_COSINE = 0.9995  #: the saturating path with 8-bit weights scored 0.979 against the exact one

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


if __name__ == "__main__":  # record the reference (after `make judge`)
    np.save(REFERENCE, _judge().embed(TEXTS).astype(np.float32))
    print(f"wrote {REFERENCE}", file=sys.stderr)
