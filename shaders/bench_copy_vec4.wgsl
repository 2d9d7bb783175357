// Device-to-device copy as a compute kernel: the ceiling for any kernel that reads and writes
// each element once. Grid-strided over vec4 elements.
struct Params {
    n4: u32,
    stride: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var i = gid.x;
    loop {
        if (i >= p.n4) {
            break;
        }
        dst[i] = src[i];
        i = i + p.stride;
    }
}
