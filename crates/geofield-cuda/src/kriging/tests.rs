#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use crate::{compile_with_log, module_source, nvrtc_present};

#[test]
fn kriging_module_compiles() {
    if !nvrtc_present() {
        eprintln!("skipping: no NVRTC");
        return;
    }
    let src = module_source("kriging").unwrap();
    for arch in ["sm_90"] {
        let t = std::time::Instant::now();
        let c = match compile_with_log("kriging", src, arch) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        eprintln!("{arch}: {:.1} s, {} bytes of PTX", t.elapsed().as_secs_f64(), c.ptx.len());
        for line in c.log.lines().filter(|l| l.contains("Used") || l.contains("entry") || l.contains("spill") || l.contains("warning")) {
            eprintln!("  {}", line.trim());
        }
    }
}
