class CustomOp(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  fc1 : __torch__.torch.nn.modules.linear.Linear
  fc2 : __torch__.torch.nn.modules.linear.___torch_mangle_0.Linear
  def forward(self: __torch__.zoo.CustomOp,
    x: Tensor) -> Tensor:
    fc2 = self.fc2
    fc1 = self.fc1
    input = ops.demo_kernels.fused_scale_gelu((fc1).forward(x, ), 0.5)
    return (fc2).forward(input, )
