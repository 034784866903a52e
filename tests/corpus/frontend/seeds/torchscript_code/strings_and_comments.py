    a = ops.mylib.rope(x, "ops.fake.call(") # ops.c.d(
    b = ops.v.k(ops.w.z(a))
