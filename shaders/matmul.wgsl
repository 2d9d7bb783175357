// Ladder rung 3: a small matmul, c[m, n] = sum_k a[m, k] * b[k, n], row-major, exact on small integers.
struct Params {
    m: u32,
    n: u32,
    k: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.y;
    let col = gid.x;
    if (row < p.m && col < p.n) {
        var acc = 0.0;
        for (var i = 0u; i < p.k; i = i + 1u) {
            acc = acc + a[row * p.k + i] * b[i * p.n + col];
        }
        c[row * p.n + col] = acc;
    }
}
