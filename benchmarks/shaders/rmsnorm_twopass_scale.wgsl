// Two-pass RMSNorm, pass 2 (benchmarks/rmsnorm_variants.py): y = x * inv[row] * w, one vec4 per
// invocation over the whole tensor.
struct Params {
    rows: u32,
    d4: u32,
    eps: f32,
    groups_x: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> inv: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * p.groups_x) * 256u + lid;
    if (i >= p.rows * p.d4) {
        return;
    }
    y[i] = x[i] * inv[i / p.d4] * w[i % p.d4];
}
