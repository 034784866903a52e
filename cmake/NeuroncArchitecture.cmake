# Who may include whom: the one list docs/DESIGN.md quotes and tests/architecture enforces on
# every source file (tests/architecture/check_includes.cmake). A module may always include its
# own headers; `neuronc/X` (the public API) counts as the module whose include/neuronc holds X:
# `kernels` for neuronc/dtype.h and neuronc/status.h, `loader` for the rest. `kernels` is the leaf every module may
# include. Arrows point one way: a module never includes one listed after it unless allowed
# here, and the loader never includes a compiler-side module.
set(NEURONC_MODULES kernels ir frontend passes device codegen artifact_format loader compiler tools examples)

set(NEURONC_MAY_INCLUDE_kernels "")
set(NEURONC_MAY_INCLUDE_ir kernels)
set(NEURONC_MAY_INCLUDE_frontend kernels ir)
set(NEURONC_MAY_INCLUDE_passes kernels ir)
set(NEURONC_MAY_INCLUDE_device kernels)
set(NEURONC_MAY_INCLUDE_codegen kernels ir device)
set(NEURONC_MAY_INCLUDE_artifact_format kernels device)
set(NEURONC_MAY_INCLUDE_loader kernels artifact_format device)
set(NEURONC_MAY_INCLUDE_compiler kernels ir frontend passes device codegen artifact_format)
set(NEURONC_MAY_INCLUDE_tools kernels ir frontend passes device codegen artifact_format loader compiler)
# Examples embed the loader as a service outside the tree would: through the public API only
# (neuronc/*.h, which live in loader/include and kernels/include), never tools/ (its npy reader
# included) or a module's internals. NEURONC_PUBLIC_API_ONLY narrows the table for them: another
# module's headers count only when included as neuronc/X.
set(NEURONC_MAY_INCLUDE_examples kernels loader)
set(NEURONC_PUBLIC_API_ONLY examples)
