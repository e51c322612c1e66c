"""The scripts under examples/ run and say what they did."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_compose_passes():
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "compose_passes.py")], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    before, after = out.split("== caption_googlenet: dycl-pipeline, example-name-after-weights, dycl-single-thread ==")
    assert "@subdnn_0:" in before and "@subdnn_1:" in before
    assert "@subdnn_" not in after  # the example's own pass renamed them, calls included
    assert "  @decoder_decoder_att: 31 ops, at most 1 thread(s)" in after  # (the features projection left the loop)
    assert "manifest: @decoder_decoder_att: 1773568 multiply-accumulates, threads 1" in after
    assert "matches eager PyTorch on 10 inputs that take every path: max abs error" in out
