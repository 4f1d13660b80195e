"""Mako rendering of the templates under ``templates/``."""

from mako.lookup import TemplateLookup

from onnxcc.core.cgen import c_float, c_literal, c_type
from onnxcc.core.ctext import c_comment, c_string
from onnxcc.core.paths import TEMPLATES_DIR
from onnxcc.ops.common.epilogue import epilogue_code, sums_start, vector_epilogue_code, vectorizable
from onnxcc.ops.unary import expression_code

_lookup = TemplateLookup(directories=[TEMPLATES_DIR], strict_undefined=True,
                         input_encoding="utf-8")


def render(template, **values):
    """Render ``templates/<template>`` with the C spelling helpers in scope (model text
    reaches C only through ``c_comment`` and ``c_string``: see core/ctext.py)."""
    text = _lookup.get_template(template).render(
        c_float=c_float, c_literal=c_literal, c_type=c_type, c_comment=c_comment, c_string=c_string,
        epilogue=epilogue_code, expression=expression_code,
        vector_epilogue=vector_epilogue_code, vectorizable=vectorizable, sums_start=sums_start,
        **values)
    return text.rstrip() + "\n"


def render_def(template, name, **values):
    """One ``<%def>`` of ``templates/<template>`` alone (the tests compile helpers apart)."""
    return _lookup.get_template(template).get_def(name).render(**values).rstrip() + "\n"
