"""QLinearConv's and QGemm's tactics, the reference first: the table, each family of
kernels in its own module (q15.py: the DSP extension's int16 pairs; mve.py: Helium)."""

from onnxcc.ops import Tactic

from . import mve, q15
from .lowering import lower_qconv, lower_qgemm

TACTICS = {
    "QLinearConv": [
        # its kernels that write over an input: qlinear_inplace.INPLACE
        Tactic("reference", lambda n, g, cpu: lower_qconv(n, g), cost=q15.cost_reference),
        Tactic("gemm_q15", q15.lower_gemm, q15._gemm_applies, q15.cost_gemm, q15._gemm_in_place),
        Tactic("depthwise_q15", q15.lower_depthwise, q15._depthwise_applies, q15.cost_depthwise,
               q15._depthwise_in_place),
        Tactic("gemm_mve", mve.lower, mve.applies, mve.cost, mve.in_place)],
    "QGemm": [
        Tactic("reference", lambda n, g, cpu: lower_qgemm(n, g), cost=q15.cost_qgemm_reference),
        Tactic("gemm_q15", q15.lower_qgemm_q15, q15._qgemm_applies, q15.cost_qgemm_q15),
        Tactic("gemm_mve", mve.lower_qgemm, mve.qgemm_applies, mve.cost_qgemm)],
}
