"""The baseline: the least wgpu-py code that runs the same RMSNorm cases on the default adapter.

No adapter listing, no ladder, no child process, no JSON: request the adapter wgpu picks for high
performance, run shaders/rmsnorm.wgsl on the probe's cases, compare with float64, print one line.
"""

import sys
from pathlib import Path

import numpy as np
import wgpu

SHADER = Path(__file__).resolve().parent.parent / "shaders" / "rmsnorm.wgsl"
CASES = [(4, 8), (4, 16), (4, 32), (3, 1), (5, 33), (7, 1001), (512, 4096), (300, 4096)]
EPS = 1e-6

adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
device = adapter.request_device_sync()
module = device.create_shader_module(code=SHADER.read_text())
pipeline = device.create_compute_pipeline(
    layout="auto", compute={"module": module, "entry_point": "main"}
)
rng = np.random.default_rng()
worst = 0.0
for rows, d in CASES:
    x = rng.standard_normal((rows, d), dtype=np.float32)
    w = rng.uniform(0.5, 1.5, d).astype(np.float32)
    usage = wgpu.BufferUsage.STORAGE
    xb = device.create_buffer_with_data(data=x, usage=usage)
    wb = device.create_buffer_with_data(data=w, usage=usage)
    yb = device.create_buffer(size=x.nbytes, usage=usage | wgpu.BufferUsage.COPY_SRC)
    params = np.array([rows, d, 0, rows], dtype=np.uint32)
    params[2] = np.float32(EPS).view(np.uint32)
    pb = device.create_buffer_with_data(data=params, usage=wgpu.BufferUsage.UNIFORM)
    bind = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, b in enumerate((xb, wb, yb, pb))
        ],
    )
    encoder = device.create_command_encoder()
    cpass = encoder.begin_compute_pass()
    cpass.set_pipeline(pipeline)
    cpass.set_bind_group(0, bind)
    cpass.dispatch_workgroups(rows, 1, 1)
    cpass.end()
    device.queue.submit([encoder.finish()])
    # wait for the work as the probe does before it reads back (probes/wgpu_kernels.py): the
    # readback alone waits by polling, which on lavapipe costs 0.1-0.2 s per run in all
    device._poll_wait()
    y = np.frombuffer(device.queue.read_buffer(yb), dtype=np.float32).reshape(rows, d)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + EPS) * w
    err = np.abs(y - ref) / np.maximum(np.abs(ref), 1e-30)
    worst = max(worst, float(np.max(err)) if np.all(np.isfinite(y)) else float("inf"))
print(f"{adapter.summary}: worst relative error {worst:.3g}")
sys.exit(0 if worst <= 1e-5 else 1)
