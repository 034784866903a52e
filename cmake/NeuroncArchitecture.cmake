# Who may include whom: the one list docs/DESIGN.md quotes and tests/architecture enforces on
# every source file (tests/architecture/check_includes.cmake). A module may always include its
# own headers; `neuronc/...` (the loader's public API, loader/include/neuronc) counts as
# `loader`. Arrows point one way: a module never includes one listed after it unless allowed
# here, and the loader never includes a compiler-side module.
set(NEURONC_MODULES ir frontend passes device codegen artifact_format loader compiler tools)

set(NEURONC_MAY_INCLUDE_ir "")
set(NEURONC_MAY_INCLUDE_frontend ir)
set(NEURONC_MAY_INCLUDE_passes ir)
set(NEURONC_MAY_INCLUDE_device "")
set(NEURONC_MAY_INCLUDE_codegen ir device)
set(NEURONC_MAY_INCLUDE_artifact_format device)
set(NEURONC_MAY_INCLUDE_loader artifact_format device)
# The compiler reads the loader's host-kernel registry to place nodes on the host (until the
# planned leaf kernels/ library holds it).
set(NEURONC_MAY_INCLUDE_compiler ir frontend passes device codegen artifact_format loader)
set(NEURONC_MAY_INCLUDE_tools ir frontend passes device codegen artifact_format loader compiler)
