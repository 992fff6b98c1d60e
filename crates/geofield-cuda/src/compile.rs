//! NVRTC compilation of the kernel modules in `kernels/`.
//!
//! NVRTC has no include path to `common.cuh`, so every module is compiled as
//! `common.cuh ++ <module>.cu`, with `#line` markers so that compiler messages name the right
//! file and line. Options: `--gpu-architecture=sm_XY` (the device's own compute capability),
//! `--use_fast_math` (flush-to-zero, approximate division and square root; the kernels call the
//! SFU approximations explicitly anyway) and C++17. No line info: it doubles the PTX.
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
pub(crate) const PROBE_SOURCE: &str =
    "extern \"C\" __global__ void geofield_probe(int* out, int x) { out[0] = 2 * x + 1; }\n";

/// Every kernel module: (name, source). A module longer than one file is its parts
/// concatenated; each part after the first starts with `#line 2 "part.cu"`, so NVRTC's
/// messages name the part and its line. Modules are compiled on first use per device
/// ([`crate::Gpu::module`]); tests compile all of them with [`compile_check`].
pub const MODULES: &[(&str, &str)] = &[
    ("probe", PROBE_SOURCE),
    ("dispersal", include_str!("../kernels/dispersal.cu")),
    ("grid", include_str!("../kernels/grid.cu")),
    ("neighbors", include_str!("../kernels/neighbors.cu")),
    (
        "flock",
        concat!(
            include_str!("../kernels/flock.cu"),
            include_str!("../kernels/flock_grid.cu"),
            include_str!("../kernels/flock_search.cu"),
            include_str!("../kernels/flock_step.cu")
        ),
    ),
    (
        "kriging",
        concat!(
            include_str!("../kernels/kriging.cu"),
            include_str!("../kernels/kriging_global.cu"),
            include_str!("../kernels/kriging_local.cu")
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
    if !nvrtc_present() {
        return Err(CudaError::NvrtcMissing);
    }
    if !valid_arch(arch) {
        return Err(invalid(
            "NVRTC",
            format!("architecture {arch:?} is not of the form sm_XY or compute_XY"),
        ));
    }
    let src = CString::new(full_source(name, source))
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
mod tests {
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
                let spills: Vec<&str> = c
                    .log
                    .lines()
                    .filter(|l| l.contains("spill") && !l.contains(" 0 bytes spill stores"))
                    .collect();
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
