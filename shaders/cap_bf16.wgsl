// Capability rung bf16-storage: bf16 values packed two per u32 (WGSL has no bf16 type), as
// kernels keep bf16 tensors. Each word is unpacked with shifts, RMSNorm runs in f32, and the
// result is packed back with round-to-nearest-even. The unpacked inputs are also packed back
// unchanged into `echo`: that round trip must be exact. One workgroup per row; d is even.
const WG: u32 = 64u;

struct Params {
    rows: u32,
    d: u32,
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> echo: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

var<workgroup> partial: array<f32, WG>;

fn lo(word: u32) -> f32 {
    return bitcast<f32>(word << 16u);
}

fn hi(word: u32) -> f32 {
    return bitcast<f32>(word & 0xffff0000u);
}

fn to_bf16(v: f32) -> u32 {
    let bits = bitcast<u32>(v);
    return (bits + 0x7fffu + ((bits >> 16u) & 1u)) >> 16u;
}

fn pack(a: f32, b: f32) -> u32 {
    return to_bf16(a) | (to_bf16(b) << 16u);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let half_d = p.d / 2u;
    let base = wid.x * half_d;
    var acc = 0.0;
    for (var i = lid.x; i < half_d; i = i + WG) {
        let word = x[base + i];
        let a = lo(word);
        let b = hi(word);
        acc = acc + a * a + b * b;
        echo[base + i] = pack(a, b);
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
    let inv = inverseSqrt(partial[0] / f32(p.d) + p.eps);
    for (var i = lid.x; i < half_d; i = i + WG) {
        let word = x[base + i];
        let ws = w[i];
        y[base + i] = pack(lo(word) * inv * lo(ws), hi(word) * inv * hi(ws));
    }
}
