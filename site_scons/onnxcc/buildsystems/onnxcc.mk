# onnxcc for Makefiles (GNU make 4):
#
#   include $(shell onnxcc --make-include)
#   $(eval $(call onnxcc_model,kws,models/kws.onnx,cortex-m4[,--weights-section .ext ...]))
#   CFLAGS += $(KWS_TARGET_CFLAGS)
#   CPPFLAGS += $(KWS_CPPFLAGS)
#   LDLIBS += $(KWS_LIBS)
#   firmware.elf: $(KWS_LIBRARY) ...
#
# onnxcc_model compiles the model into $(ONNXCC_BUILD)/<target>/<name>/ and includes the fragment
# written beside the library (<name>.mk: KWS_LIBRARY, KWS_CPPFLAGS, KWS_LIBS,
# KWS_TARGET_CFLAGS, KWS_ARENA_BYTES, ...). make rebuilds the model, then reads the fragment
# anew, when the .onnx file, the target, the flags (of `onnxcc build`) or onnxcc changed.
# Paths are relative to the folder make runs in.

ONNXCC_COMMAND ?= onnxcc
ONNXCC_BUILD ?= build/onnxcc
ONNXCC_PACKAGE := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))/..
ONNXCC_PACKAGE_FILES := $(shell find $(ONNXCC_PACKAGE) -type f \( -name '*.py' -o -name '*.mako' \
                          -o -name '*.toml' -o -name '*.[ch]' -o -name '*.ld' \))

# $(1) name (a C identifier), $(2) the .onnx file, $(3) the target, $(4) flags of onnxcc build.
# <name>.flags holds the command line, rewritten (so newer) only when it changed; the
# flags must not hold a single quote.
define onnxcc_model
ONNXCC_$(1)_TARGET := $$(shell $$(ONNXCC_COMMAND) targets $(3))
$$(if $$(ONNXCC_$(1)_TARGET),,$$(error onnxcc_model $(1): no target $(3) (onnxcc targets)))
ONNXCC_$(1)_DIR := $(ONNXCC_BUILD)/$$(ONNXCC_$(1)_TARGET)/$(1)
ONNXCC_$(1)_ARGS := build $(2) --target $(3) --name $(1) -o $(ONNXCC_BUILD) $(4)
$$(ONNXCC_$(1)_DIR).flags: _onnxcc_force
	@mkdir -p $$(@D)
	@printf '%s\n' '$$(ONNXCC_$(1)_ARGS)' | cmp -s - $$@ || printf '%s\n' '$$(ONNXCC_$(1)_ARGS)' > $$@
$$(ONNXCC_$(1)_DIR)/$(1).mk: $(2) $$(ONNXCC_$(1)_DIR).flags $$(ONNXCC_PACKAGE_FILES)
	$$(ONNXCC_COMMAND) $$(ONNXCC_$(1)_ARGS)
	touch $$@
include $$(ONNXCC_$(1)_DIR)/$(1).mk
endef

.PHONY: _onnxcc_force
_onnxcc_force:
