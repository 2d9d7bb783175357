// Ladder rung 2: a workgroup-memory reduction with barriers, exact on integers.
// Each workgroup sums PER_GROUP consecutive u32 values into out[group]. Every barrier is reached by
// all invocations of the workgroup (uniform control flow); only the loads and adds are guarded.
const WG: u32 = 64u;
const PER_THREAD: u32 = 4u;

struct Params {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> sums: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let start = wid.x * WG * PER_THREAD;
    var acc = 0u;
    for (var k = 0u; k < PER_THREAD; k = k + 1u) {
        let i = start + k * WG + lid.x;
        if (i < p.n) {
            acc = acc + x[i];
        }
    }
    sums[lid.x] = acc;
    workgroupBarrier();
    var s = WG / 2u;
    loop {
        if (s == 0u) {
            break;
        }
        if (lid.x < s) {
            sums[lid.x] = sums[lid.x] + sums[lid.x + s];
        }
        workgroupBarrier();
        s = s / 2u;
    }
    if (lid.x == 0u) {
        out[wid.x] = sums[0];
    }
}
