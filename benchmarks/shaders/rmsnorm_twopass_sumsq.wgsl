// Two-pass RMSNorm, pass 1 (benchmarks/rmsnorm_variants.py): inv[row] = inverseSqrt(mean(x^2) + eps),
// one workgroup per row, subgroup reduction. Pass 2 (rmsnorm_twopass_scale.wgsl) reads x again.
struct Params {
    rows: u32,
    d4: u32,
    eps: f32,
    groups_x: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> inv: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lid: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let row = wid.x + wid.y * p.groups_x;
    if (row >= p.rows) {
        return;
    }
    var acc = 0.0;
    for (var i = lid; i < p.d4; i = i + WG) {
        let v = x[row * p.d4 + i];
        acc = acc + dot(v, v);
    }
    acc = subgroupAdd(acc);
    if (sg_lid == 0u) {
        partial[lid / sg_size] = acc;
    }
    workgroupBarrier();
    if (lid == 0u) {
        var total = 0.0;
        for (var s = 0u; s < WG / sg_size; s = s + 1u) {
            total = total + partial[s];
        }
        inv[row] = inverseSqrt(total / f32(p.d4 * 4u) + p.eps);
    }
}
