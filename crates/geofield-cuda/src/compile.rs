//! NVRTC compilation of the kernel modules in `kernels/`.
//!
//! NVRTC has no include path to `common.cuh`, so every module is compiled as
//! `common.cuh ++ <module>.cu`, with `#line` markers so that compiler messages name the right
//! file and line. Options: `--gpu-architecture=sm_XY` (the device's own compute capability),
//! `--use_fast_math` (flush-to-zero, approximate division and square root; the kernels call the
//! SFU approximations explicitly anyway) and C++17. No line info: it doubles the PTX.
//!
//! Only the kernels a run needs are compiled: every kernel in `kernels/` is guarded by
//! `GF_WANTED(name)` (see `common.cuh`), and [`selected_source`] puts `#define GF_SELECT 1` and
//! one `#define GF_WANT_<kernel> 1` per wanted kernel in front of the module, so NVRTC parses
//! the module but generates code for those kernels alone. (The kriging module alone holds 80
//! kernels, 72 of them instantiations of the dual evaluation over precision × covariance model ×
//! surfaces per launch, each with its unrolled pair loop: compiled together they took NVRTC
//! 14–29 s; one of them takes under a second.) [`crate::Gpu`] compiles each kernel as its own
//! unit, several in parallel threads, and caches each on disk ([`crate::disk_cache`]).
//!
//! For a real `sm_XY` target NVRTC also runs ptxas and hands back a CUBIN; [`crate::Gpu`] loads
//! that when it was built for the device's own architecture, so the driver does not JIT the PTX a
//! second time (PTX is the fallback, e.g. for a device newer than NVRTC).

use std::ffi::CString;

use cudarc::nvrtc::result as nvrtc;
use cudarc::nvrtc::sys as nvrtc_sys;

use crate::error::{CudaError, invalid};
use crate::probe::{nvrtc_present, nvrtc_version};

/// Device helpers prepended to every module.
pub const COMMON_SOURCE: &str = include_str!("../kernels/common.cuh");

/// The probe's one-line kernel: `out[0] = 2 x + 1`.
pub(crate) const PROBE_SOURCE: &str = "#if GF_WANTED(geofield_probe)\nextern \"C\" __global__ void \
     geofield_probe(int* out, int x) { out[0] = 2 * x + 1; }\n#endif\n";

/// Every kernel module: (name, source). A module longer than one file is its parts
/// concatenated; each part after the first starts with `#line 2 "part.cu"`, so NVRTC's
/// messages name the part and its line. Runs compile the kernels they launch, each as its own
/// unit ([`crate::Gpu::prepare`], [`compile_kernels`]); tests compile whole modules with
/// [`compile_check`].
pub const MODULES: &[(&str, &str)] = &[
    ("probe", PROBE_SOURCE),
    (
        "dispersal",
        concat!(
            include_str!("../kernels/dispersal.cu"),
            include_str!("../kernels/dispersal_multires.cu"),
            include_str!("../kernels/dispersal_far.cu")
        ),
    ),
    ("grid", include_str!("../kernels/grid.cu")),
    ("neighbors", include_str!("../kernels/neighbors.cu")),
    ("ball", include_str!("../kernels/ball.cu")),
    ("sim", include_str!("../kernels/sim.cu")),
    ("tiles", include_str!("../kernels/tiles.cu")),
    (
        "forest",
        concat!(
            include_str!("../kernels/forest.cu"),
            include_str!("../kernels/forest_draws.cu"),
            include_str!("../kernels/forest_year.cu")
        ),
    ),
    (
        "flock",
        concat!(
            include_str!("../kernels/flock.cu"),
            include_str!("../kernels/flock_grid.cu"),
            include_str!("../kernels/flock_search.cu"),
            include_str!("../kernels/flock_scene.cu"),
            include_str!("../kernels/flock_step.cu")
        ),
    ),
    (
        "kriging",
        concat!(
            include_str!("../kernels/kriging.cu"),
            include_str!("../kernels/kriging_global.cu"),
            include_str!("../kernels/kriging_local.cu"),
            include_str!("../kernels/kriging_points.cu")
        ),
    ),
    (
        "wind",
        concat!(
            include_str!("../kernels/wind.cu"),
            include_str!("../kernels/wind_multigrid.cu"),
            include_str!("../kernels/wind_solve.cu")
        ),
    ),
];

/// The source of a registered module.
pub fn module_source(name: &str) -> Option<&'static str> {
    MODULES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The text NVRTC compiles for a module: `common.cuh` followed by the module's source.
pub fn full_source(name: &str, source: &str) -> String {
    format!("#line 1 \"common.cuh\"\n{COMMON_SOURCE}\n#line 1 \"{name}.cu\"\n{source}\n")
}

/// The text NVRTC compiles for the kernels `kernels` of a module (each a kernel name: letters,
/// digits and `_`): [`full_source`] behind the selection defines (`common.cuh` explains them).
pub fn selected_source(name: &str, source: &str, kernels: &[&str]) -> Result<String, CudaError> {
    let mut s = String::from("#define GF_SELECT 1\n");
    for k in kernels {
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(invalid(
                "NVRTC",
                format!("kernel name {k:?} of module `{name}` is not an identifier"),
            ));
        }
        s.push_str(&format!("#define GF_WANT_{k} 1\n"));
    }
    s.push_str(&full_source(name, source));
    Ok(s)
}

/// Compiles only `kernels` of a module (see [`selected_source`]) for `arch`, with NVRTC alone.
/// A kernel the module does not define is an error naming it.
pub fn compile_kernels(
    name: &str,
    source: &str,
    kernels: &[&str],
    arch: &str,
) -> Result<Compiled, CudaError> {
    let text = selected_source(name, source, kernels)?;
    let c = compile_text(name, &text, arch, false)?;
    for k in kernels {
        if !ptx_defines(&c.ptx, k) {
            return Err(invalid(
                "NVRTC",
                format!("module `{name}` has no kernel `{k}`"),
            ));
        }
    }
    Ok(c)
}

/// Whether PTX text defines the kernel entry `kernel`.
pub(crate) fn ptx_defines(ptx: &str, kernel: &str) -> bool {
    ptx.lines().any(|l| {
        l.split_whitespace()
            .skip_while(|w| *w != ".entry")
            .nth(1)
            .is_some_and(|w| w.trim_end_matches('(') == kernel)
    })
}

/// The NVRTC options used for `arch` (e.g. `sm_90`). `ptxas_verbose` adds `-Xptxas=-v`, whose
/// register and spill report lands in the compile log (real `sm_` targets only).
pub fn compile_options(arch: &str, ptxas_verbose: bool) -> Vec<String> {
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        "--use_fast_math".to_string(),
        "--std=c++17".to_string(),
    ];
    if ptxas_verbose && arch.starts_with("sm_") {
        opts.push("-Xptxas=-v".to_string());
    }
    opts
}

/// PTX, the CUBIN (real `sm_` targets) and NVRTC's log (warnings; with `-Xptxas=-v` the
/// per-kernel register and spill report).
#[derive(Debug, Clone)]
pub struct Compiled {
    pub ptx: String,
    pub cubin: Option<Vec<u8>>,
    pub log: String,
}

/// Compiles a module to PTX for `arch` (`sm_80`, `sm_90`, ...) with NVRTC alone: no GPU needed.
/// `name` is the module's name (used in messages), `source` its text without `common.cuh`.
pub fn compile_check(name: &str, source: &str, arch: &str) -> Result<String, CudaError> {
    Ok(compile(name, source, arch, false)?.ptx)
}

/// As [`compile_check`], also returning NVRTC's log with ptxas' register/spill report.
pub fn compile_with_log(name: &str, source: &str, arch: &str) -> Result<Compiled, CudaError> {
    compile(name, source, arch, true)
}

fn valid_arch(arch: &str) -> bool {
    let digits = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))
        .map(|d| d.trim_end_matches(['a', 'f']));
    matches!(digits, Some(d) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Destroys an NVRTC program when dropped.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: self.0 came from create_program and is destroyed exactly once, here. A failure
        // to destroy only leaks the program; there is nothing to report it to from a Drop.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

fn nvrtc_err(name: &str, action: &'static str) -> impl FnOnce(nvrtc::NvrtcError) -> CudaError {
    let module = name.to_string();
    move |source| CudaError::Nvrtc {
        module,
        action,
        source,
    }
}

fn chars_to_string(v: Vec<std::ffi::c_char>) -> String {
    let bytes: Vec<u8> = v
        .into_iter()
        .map(|c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub(crate) fn compile(
    name: &str,
    source: &str,
    arch: &str,
    ptxas_verbose: bool,
) -> Result<Compiled, CudaError> {
    compile_text(name, &full_source(name, source), arch, ptxas_verbose)
}

/// Compiles the complete text `text` (common.cuh included) of module `name`.
pub(crate) fn compile_text(
    name: &str,
    text: &str,
    arch: &str,
    ptxas_verbose: bool,
) -> Result<Compiled, CudaError> {
    if !nvrtc_present() {
        return Err(CudaError::NvrtcMissing);
    }
    if !valid_arch(arch) {
        return Err(invalid(
            "NVRTC",
            format!("architecture {arch:?} is not of the form sm_XY or compute_XY"),
        ));
    }
    let src = CString::new(text)
        .map_err(|_| invalid("NVRTC", format!("module `{name}` contains a NUL byte")))?;
    let file = CString::new(format!("{name}.cu"))
        .map_err(|_| invalid("NVRTC", format!("module name {name:?} contains a NUL byte")))?;
    let prog = Program(
        nvrtc::create_program(&src, Some(&file))
            .map_err(nvrtc_err(name, "creating the program"))?,
    );
    let opts = compile_options(arch, ptxas_verbose);
    // SAFETY: prog.0 is a live program (destroyed only when `prog` drops, after the last use
    // below); `src` and `file`, which it may reference, outlive `prog` (declared before it).
    let status = unsafe { nvrtc::compile_program(prog.0, &opts) };
    // SAFETY: as above; the log exists after any compile attempt.
    let log = unsafe { nvrtc::get_program_log(prog.0) }
        .map(chars_to_string)
        .map_err(nvrtc_err(name, "reading the compile log"))?;
    if let Err(e) = status {
        return Err(
            if e.0 == nvrtc_sys::nvrtcResult::NVRTC_ERROR_COMPILATION
                || e.0 == nvrtc_sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION
            {
                CudaError::Compile {
                    module: name.to_string(),
                    arch: arch.to_string(),
                    options: opts.join(" "),
                    log: if log.trim().is_empty() {
                        format!("(empty log; NVRTC returned {e:?})")
                    } else {
                        log
                    },
                }
            } else {
                nvrtc_err(name, "compiling")(e)
            },
        );
    }
    // SAFETY: the program compiled successfully, so its PTX is available.
    let ptx = unsafe { nvrtc::get_ptx(prog.0) }
        .map(chars_to_string)
        .map_err(nvrtc_err(name, "reading the PTX"))?;
    let cubin = if arch.starts_with("sm_") {
        read_cubin(&prog)
    } else {
        None
    };
    Ok(Compiled { ptx, cubin, log })
}

/// The CUBIN of a compiled program, if NVRTC produced one.
fn read_cubin(prog: &Program) -> Option<Vec<u8>> {
    let mut size: usize = 0;
    // SAFETY: prog.0 is a live, successfully compiled program; the call writes one usize.
    let r = unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog.0, &mut size) };
    if r != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
        return None;
    }
    let mut buf = vec![0u8; size];
    // SAFETY: `buf` has the `size` bytes NVRTC just reported it will write.
    let r = unsafe { nvrtc_sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr().cast()) };
    (r == nvrtc_sys::nvrtcResult::NVRTC_SUCCESS).then_some(buf)
}

/// Compute capabilities NVRTC can target, as major*10+minor (e.g. 75, 80, 90, 100, 120).
pub fn nvrtc_supported_archs() -> Result<Vec<i32>, CudaError> {
    if !nvrtc_present() {
        return Err(CudaError::NvrtcMissing);
    }
    let mut n: std::ffi::c_int = 0;
    // SAFETY: NVRTC is loaded (checked above); the call writes one int.
    unsafe { nvrtc_sys::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(nvrtc_err("-", "listing supported architectures"))?;
    let mut archs = vec![0 as std::ffi::c_int; usize::try_from(n).unwrap_or(0)];
    if !archs.is_empty() {
        // SAFETY: `archs` holds exactly the n ints NVRTC just said it will write.
        unsafe { nvrtc_sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
            .result()
            .map_err(nvrtc_err("-", "listing supported architectures"))?;
    }
    Ok(archs)
}

/// The `sm_XY` to compile for a device of compute capability (major, minor): its own if NVRTC
/// supports it, else the newest older one NVRTC knows (PTX is forward compatible; the driver
/// JIT-compiles it for the device).
pub fn arch_for(major: i32, minor: i32) -> Result<String, CudaError> {
    let cc = major * 10 + minor;
    let supported = nvrtc_supported_archs()?;
    if supported.contains(&cc) || supported.is_empty() {
        return Ok(format!("sm_{cc}"));
    }
    match supported.iter().copied().filter(|&a| a < cc).max() {
        Some(a) => Ok(format!("sm_{a}")),
        None => {
            let (nvrtc_major, nvrtc_minor) = nvrtc_version().unwrap_or((0, 0));
            Err(CudaError::UnsupportedArch {
                major,
                minor,
                nvrtc_major,
                nvrtc_minor,
                supported: supported
                    .iter()
                    .map(|a| format!("sm_{a}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn arch_strings_are_validated() {
        assert!(valid_arch("sm_90"));
        assert!(valid_arch("sm_90a"));
        assert!(valid_arch("compute_80"));
        assert!(!valid_arch("sm_"));
        assert!(!valid_arch("sm_90 --foo"));
        assert!(!valid_arch("90"));
    }

    #[test]
    fn registry_is_consistent() {
        for (i, (name, src)) in MODULES.iter().enumerate() {
            assert!(!src.is_empty(), "module {name} is empty");
            assert!(!src.contains('\0'), "module {name} has a NUL byte");
            assert!(
                MODULES[..i].iter().all(|(n, _)| n != name),
                "duplicate module {name}"
            );
            assert_eq!(module_source(name), Some(*src));
        }
        assert!(full_source("x", "int y;").contains("GEOFIELD_COMMON_CUH"));
    }

    /// Compiles every registered module for sm_90 and sm_80 when NVRTC is present (run with
    /// LD_LIBRARY_PATH=/opt/nvrtc on the dev machine); prints ptxas' register/spill report.
    /// Fails on any compile error; without NVRTC it prints a notice and passes, unless
    /// GEOFIELD_REQUIRE_GPU=1 (the GPU machine), where NVRTC must be there.
    #[test]
    fn every_module_compiles_with_nvrtc() {
        if !nvrtc_present() {
            assert!(
                std::env::var("GEOFIELD_REQUIRE_GPU").as_deref() != Ok("1"),
                "GEOFIELD_REQUIRE_GPU=1 but {}",
                CudaError::NvrtcMissing
            );
            eprintln!("skipping NVRTC compile check: {}", CudaError::NvrtcMissing);
            return;
        }
        eprintln!(
            "NVRTC {:?}, supports {:?}",
            nvrtc_version(),
            nvrtc_supported_archs()
        );
        for arch in ["sm_90", "sm_80"] {
            for (name, src) in MODULES {
                let c = match compile_with_log(name, src, arch) {
                    Ok(c) => c,
                    Err(e) => panic!("{e}"),
                };
                assert!(
                    c.ptx.contains(".entry"),
                    "{name}/{arch}: PTX has no kernel entry"
                );
                let spills = spilling_functions(&c.log);
                eprintln!(
                    "{name} {arch}: {} bytes of PTX, {} bytes of CUBIN",
                    c.ptx.len(),
                    c.cubin.as_ref().map_or(0, Vec::len)
                );
                for line in c
                    .log
                    .lines()
                    .filter(|l| l.contains("Used") || l.contains("entry"))
                {
                    eprintln!("  {}", line.trim());
                }
                assert!(
                    spills.is_empty(),
                    "{name}/{arch} spills registers: {spills:?}"
                );
            }
        }
    }

    /// The functions of a ptxas log that spill registers, with their spill lines, except the
    /// few allowed to ([`crate::forest::year::SPILLS_ALLOWED`]).
    pub(crate) fn spilling_functions(log: &str) -> Vec<String> {
        let mut function = "";
        let mut out = Vec::new();
        for l in log.lines() {
            if let Some(f) = l.split("Function properties for ").nth(1) {
                function = f.trim();
            } else if l.contains("spill")
                && !l.contains(" 0 bytes spill stores")
                && !crate::forest::year::SPILLS_ALLOWED.contains(&function)
            {
                out.push(format!("{function}: {}", l.trim()));
            }
        }
        out
    }

    #[test]
    fn selection_rejects_non_identifiers_and_finds_entries() {
        assert!(selected_source("m", "", &["a b"]).is_err());
        assert!(selected_source("m", "", &[""]).is_err());
        assert!(selected_source("m", "", &["x); evil"]).is_err());
        let s = selected_source("m", "int y;", &["k_1", "k2"]).unwrap();
        assert!(
            s.starts_with("#define GF_SELECT 1\n#define GF_WANT_k_1 1\n#define GF_WANT_k2 1\n")
        );
        let ptx = ".visible .entry kriging_nodes(\n.visible .entry kriging_local_f32(\n";
        assert!(ptx_defines(ptx, "kriging_nodes"));
        assert!(ptx_defines(ptx, "kriging_local_f32"));
        assert!(!ptx_defines(ptx, "kriging_local"));
        assert!(!ptx_defines(ptx, "kriging_local_f64"));
    }

    fn entries(ptx: &str) -> Vec<String> {
        let mut v: Vec<String> = ptx
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace().skip_while(|w| *w != ".entry");
                w.nth(1).map(|n| n.trim_end_matches('(').to_string())
            })
            .collect();
        v.sort();
        v
    }

    /// Every kernel of every module is guarded: selecting none compiles no kernel, and selecting
    /// two gives exactly those two (the run-time path compiles one kernel per unit).
    #[test]
    fn selection_compiles_exactly_the_wanted_kernels() {
        if !nvrtc_present() {
            eprintln!("skipping: {}", CudaError::NvrtcMissing);
            return;
        }
        for (name, src) in MODULES {
            let text = selected_source(name, src, &[]).unwrap();
            let c = compile_text(name, &text, "sm_90", false).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                entries(&c.ptx),
                Vec::<String>::new(),
                "module {name} has unguarded kernels"
            );
        }
        let src = module_source("kriging").unwrap();
        let want = ["kriging_dual_f32_exp_h1", "kriging_nodes"];
        let c = compile_kernels("kriging", src, &want, "sm_90").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            entries(&c.ptx),
            ["kriging_dual_f32_exp_h1", "kriging_nodes"]
        );
        match compile_kernels("kriging", src, &["kriging_dual_f32_exp_h3"], "sm_90") {
            Err(e) => assert!(e.to_string().contains("kriging_dual_f32_exp_h3"), "{e}"),
            Ok(_) => panic!("an unknown kernel compiled"),
        }
    }

    #[test]
    fn compile_errors_carry_module_and_full_log() {
        if !nvrtc_present() {
            eprintln!("skipping: {}", CudaError::NvrtcMissing);
            return;
        }
        let bad = "extern \"C\" __global__ void k() { undefined_a(); }\nint also_bad = ;\n";
        match compile_check("broken", bad, "sm_80") {
            Err(CudaError::Compile { module, log, .. }) => {
                assert_eq!(module, "broken");
                assert!(log.contains("undefined_a"), "log lacks first error: {log}");
                assert!(log.contains("broken.cu"), "log lacks the file name: {log}");
                assert!(log.contains("expected an expression"), "log is cut: {log}");
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
}
