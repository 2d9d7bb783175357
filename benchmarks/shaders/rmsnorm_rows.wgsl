// RMSNorm kernel variants for benchmarks/rmsnorm_variants.py: y = x * inverseSqrt(mean(x^2) + eps) * w.
// A workgroup of WG invocations normalises WG / TPR rows, TPR invocations per row, each holding
// VPT vec4 of x. REREAD reads x again (from cache) for the store instead of keeping it in
// registers; GUARD is false when d4 == TPR * VPT, so no load or store is bounds-tested.
// REDUCE is a tree in workgroup memory or subgroupAdd then the per-subgroup sums.
struct Params {
    rows: u32,
    d4: u32,
    eps: f32,
    groups_x: u32,
}

const WG: u32 = {{WG}}u;
const TPR: u32 = {{TPR}}u;
const VPT: u32 = {{VPT}}u;
const RPW: u32 = WG / TPR;
const REREAD: bool = {{REREAD}};
const GUARD: bool = {{GUARD}};

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    {{SG_ARGS}}
) {
    let r = lid / TPR;
    let t = lid % TPR;
    let row = (wid.x + wid.y * p.groups_x) * RPW + r;
    let live = row < p.rows;
    let base = row * p.d4;
    var v: array<vec4<f32>, VPT>;
    var acc = 0.0;
    if (live) {
        for (var k = 0u; k < VPT; k = k + 1u) {
            let i = t + k * TPR;
            if (!GUARD || i < p.d4) {
                v[k] = x[base + i];
                acc = acc + dot(v[k], v[k]);
            }
        }
    }
    {{REDUCE}}
    let inv = inverseSqrt(total / f32(p.d4 * 4u) + p.eps);
    if (live) {
        for (var k = 0u; k < VPT; k = k + 1u) {
            let i = t + k * TPR;
            if (!GUARD || i < p.d4) {
                if (REREAD) {
                    y[base + i] = x[base + i] * inv * w[i];
                } else {
                    y[base + i] = v[k] * inv * w[i];
                }
            }
        }
    }
}
