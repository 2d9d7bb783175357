// RMSNorm, persistent and software-pipelined, for benchmarks/rmsnorm_variants.py: each
// workgroup walks rows STRIDE apart (STRIDE = workgroups dispatched x rows per workgroup) and
// issues the loads of its next row before it reduces and stores the current one, so twice VPT
// vec4 per invocation are in flight. Subgroup reduction; partial sums double-buffered so one
// barrier per row suffices.
struct Params {
    rows: u32,
    d4: u32,
    eps: f32,
    stride: u32,
}

const WG: u32 = {{WG}}u;
const TPR: u32 = {{TPR}}u;
const VPT: u32 = {{VPT}}u;
const RPW: u32 = WG / TPR;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<f32, 2u * WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lid: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let r = lid / TPR;
    let t = lid % TPR;
    // first row of this workgroup: uniform, so the loop's exit keeps the barrier uniform
    var first = wid.x * RPW;
    var row = first + r;
    var cur: array<vec4<f32>, VPT>;
    var nxt: array<vec4<f32>, VPT>;
    if (row < p.rows) {
        for (var k = 0u; k < VPT; k = k + 1u) {
            let i = t + k * TPR;
            if (i < p.d4) {
                cur[k] = x[row * p.d4 + i];
            }
        }
    }
    var parity = 0u;
    loop {
        if (first >= p.rows) {
            break;
        }
        let next = row + p.stride;
        if (next < p.rows) {
            for (var k = 0u; k < VPT; k = k + 1u) {
                let i = t + k * TPR;
                if (i < p.d4) {
                    nxt[k] = x[next * p.d4 + i];
                }
            }
        }
        var acc = 0.0;
        for (var k = 0u; k < VPT; k = k + 1u) {
            if (t + k * TPR < p.d4) {
                acc = acc + dot(cur[k], cur[k]);
            }
        }
        acc = subgroupAdd(acc);
        let half = parity * WG;
        if (sg_lid == 0u) {
            partial[half + lid / sg_size] = acc;
        }
        workgroupBarrier();
        let per = TPR / sg_size;
        var total = 0.0;
        for (var s = r * per; s < (r + 1u) * per; s = s + 1u) {
            total = total + partial[half + s];
        }
        let inv = inverseSqrt(total / f32(p.d4 * 4u) + p.eps);
        if (row < p.rows) {
            for (var k = 0u; k < VPT; k = k + 1u) {
                let i = t + k * TPR;
                if (i < p.d4) {
                    y[row * p.d4 + i] = cur[k] * inv * w[i];
                }
            }
        }
        cur = nxt;
        row = next;
        first = first + p.stride;
        parity = 1u - parity;
    }
}
