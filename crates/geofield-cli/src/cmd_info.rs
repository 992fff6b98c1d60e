//! `geofield info`: version, CUDA probe, device.

use anyhow::Result;
use clap::Args;

use crate::ctx::{Ctx, Global};

#[derive(Args)]
pub struct InfoArgs {
    /// Device ordinal to probe.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

pub fn run(a: &InfoArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Backend, Global::Json, Global::Crs, Global::Compress])?;
    println!("geofield {}", env!("CARGO_PKG_VERSION"));
    println!(
        "CPU backend: available, {} threads (rayon)",
        rayon::current_num_threads()
    );
    #[cfg(feature = "mpi")]
    {
        println!("MPI: {}", geofield::mpi::library_version());
        if let Some(r) = &ctx.ranks {
            let gpus = geofield_cuda::device_count().unwrap_or(0);
            let device = if gpus > 0 {
                format!(
                    "CUDA device {} (local rank {} of its node, {gpus} GPUs)",
                    r.local_rank() % gpus,
                    r.local_rank()
                )
            } else {
                "the CPU (no GPU)".to_string()
            };
            println!(
                "MPI rank {} of {} (threads: {}): --backend auto uses {device}",
                r.rank(),
                r.size(),
                if r.threaded() { "multiple" } else { "funneled" }
            );
        }
    }
    #[cfg(not(feature = "mpi"))]
    println!("MPI: not built in (cargo build --release --features mpi; see the README)");
    let p = geofield_cuda::probe(a.device);
    if let Some((maj, min)) = p.nvrtc_version {
        println!("NVRTC: {maj}.{min}");
    }
    if let Some(v) = p.driver_version {
        println!("CUDA driver API version: {}.{}", v / 1000, (v % 1000) / 10);
    }
    if p.ok {
        println!("CUDA backend: available on device {}", a.device);
    } else {
        println!(
            "CUDA backend: unavailable ({}); --backend auto falls back to the CPU",
            p.reason.as_deref().unwrap_or("unknown reason")
        );
    }
    if let Some(d) = &p.device {
        println!("device {}: {}", d.ordinal, d.name);
        println!(
            "  compute capability {}.{}",
            d.compute_capability.0, d.compute_capability.1
        );
        println!(
            "  memory {:.1} GiB, {:.2} TB/s nominal, L2 {:.0} MiB",
            d.total_memory_bytes as f64 / (1u64 << 30) as f64,
            d.peak_bandwidth_bytes_per_s / 1e12,
            d.l2_bytes as f64 / (1u64 << 20) as f64
        );
        println!(
            "  {} multiprocessors at {:.0} MHz",
            d.multiprocessors,
            d.clock_rate_khz as f64 / 1000.0
        );
    }
    Ok(())
}
