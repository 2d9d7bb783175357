// Capability rung workgroup-memory-limit: a reduction through a workgroup array that fills the
// device's whole max-compute-workgroup-storage-size (N u32 words: the probe writes N for the
// device). Every word is written by one invocation, then summed by invocation 0; exact.
const N: u32 = __WORDS__u;
const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

var<workgroup> words: array<u32, N>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    for (var i = lid.x; i < N; i = i + WG) {
        words[i] = x[wid.x * N + i];
    }
    workgroupBarrier();
    if (lid.x == 0u) {
        var acc = 0u;
        for (var i = 0u; i < N; i = i + 1u) {
            acc = acc + words[i] * (i + 1u);
        }
        out[wid.x] = acc;
    }
}
