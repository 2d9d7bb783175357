"""A plain wgpu program, no vkdoctor: copy a 1 KiB and a 4 MiB buffer on the GPU and read them
back. Prints `SIZE ok` or `SIZE wrong` for each."""

import numpy as np
import wgpu

adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
device = adapter.request_device_sync()
for size in (1024, 4 << 20):
    data = np.arange(size // 4, dtype=np.uint32) + 7
    src = device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.COPY_SRC)
    dst = device.create_buffer(
        size=size, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
    )
    encoder = device.create_command_encoder()
    encoder.copy_buffer_to_buffer(src, 0, dst, 0, size)
    device.queue.submit([encoder.finish()])
    got = np.frombuffer(device.queue.read_buffer(dst), dtype=np.uint32)
    print(size, "ok" if (got == data).all() else "wrong")
