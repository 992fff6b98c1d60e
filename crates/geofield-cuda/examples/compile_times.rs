//! NVRTC compile times (no GPU needed): every registered module whole, then each kernel as the
//! unit a run compiles. `cargo run --release -p geofield-cuda --example compile_times -- [arch]
//! [module[/kernel] ...]` (needs libnvrtc on the library path).
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arch = args.first().cloned().unwrap_or_else(|| "sm_90".into());
    let only: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    for (name, src) in geofield_cuda::MODULES {
        let t = Instant::now();
        let kernels: Vec<&str> = only
            .iter()
            .filter_map(|s| s.strip_prefix(&format!("{name}/")))
            .collect();
        if !only.is_empty() && !only.contains(name) && kernels.is_empty() {
            continue;
        }
        let r = if kernels.is_empty() {
            geofield_cuda::compile_with_log(name, src, &arch)
        } else {
            geofield_cuda::compile_kernels(name, src, &kernels, &arch)
        };
        match r {
            Ok(c) => println!(
                "{name:10} {:50} {:7.2} s  ptx {:8} B  cubin {:8} B  entries {}",
                kernels.join(","),
                t.elapsed().as_secs_f64(),
                c.ptx.len(),
                c.cubin.as_ref().map_or(0, Vec::len),
                c.ptx.matches(".entry").count()
            ),
            Err(e) => println!("{name}: {e}"),
        }
    }
}
