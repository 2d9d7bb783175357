// RMSNorm: y[r, i] = x[r, i] * inverseSqrt(mean_j(x[r, j]^2) + eps) * w[i], f32.
// One workgroup per row; its WG invocations stride over the row, then a tree reduction in
// workgroup memory. `row` and `live_row` depend only on the workgroup id and uniforms, so every
// invocation of a workgroup reaches every barrier. Works for any d >= 1: invocations past the end
// of the row contribute 0. Rows beyond 65535 use the y dimension of the dispatch.
// lavapipe shares one budget of 65535 loop iterations per invocation across all loops:
// 2 * ceil(d / WG) + log2(WG) must stay below it (d up to about 2 million).
const WG: u32 = 64u;

struct Params {
    rows: u32,
    d: u32,
    eps: f32,
    groups_x: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let row = wid.y * p.groups_x + wid.x;
    let live_row = row < p.rows;
    let base = row * p.d;
    var acc = 0.0;
    if (live_row) {
        for (var i = lid.x; i < p.d; i = i + WG) {
            let v = x[base + i];
            acc = acc + v * v;
        }
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
    if (live_row) {
        for (var i = lid.x; i < p.d; i = i + WG) {
            y[base + i] = x[base + i] * inv * w[i];
        }
    }
}
