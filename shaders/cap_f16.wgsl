// Capability rung f16: RMSNorm in f16 arithmetic (WGSL's shader-f16), one workgroup per row.
// The f32 inputs are converted to f16 in the shader; the sum of squares, the scale and the
// product are f16; the result is stored as f16. Checked against float64 with f16's tolerance.
// requires: shader-f16
enable f16;

const WG: u32 = 64u;

struct Params {
    rows: u32,
    d: u32,
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f16>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<f16, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let row = wid.x;
    let base = row * p.d;
    var acc = f16(0.0);
    for (var i = lid.x; i < p.d; i = i + WG) {
        let v = f16(x[base + i]);
        acc = acc + v * v;
    }
    partial[lid.x] = acc;
    workgroupBarrier();
    var s = WG / 2u;
    loop {
        if (s == 0u) {
            break;
        }
        if (lid.x < s) {
            partial[lid.x] = partial[lid.x] + partial[lid.x + s];
        }
        workgroupBarrier();
        s = s / 2u;
    }
    let inv = inverseSqrt(partial[0] / f16(p.d) + f16(p.eps));
    for (var i = lid.x; i < p.d; i = i + WG) {
        y[base + i] = f16(x[base + i]) * inv * f16(w[i]);
    }
}
