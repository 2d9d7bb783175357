// Capability rung large-binding: one storage binding close to the device's largest; the kernel
// reads the first and the last element and writes the last one, which the host reads back.
@group(0) @binding(0) var<storage, read_write> big: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let last = arrayLength(&big) - 1u;
    out[0] = big[0];
    out[1] = big[last];
    big[last] = big[last] + 0x01010101u;
}
