//! Backends for Python calls: `"auto"` (CUDA when a usable GPU is found, else the CPU),
//! `"cpu"`, `"cuda"` / `"cuda:N"`. An opened GPU is kept for the life of the process, so its
//! compiled kernels are loaded once, not on every call.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use geofield::{BackendChoice, BackendSelection, backend};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;

fn opened() -> &'static Mutex<HashMap<String, BackendSelection>> {
    static OPENED: OnceLock<Mutex<HashMap<String, BackendSelection>>> = OnceLock::new();
    OPENED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The backend a call asked for, opened once per process.
pub fn open(name: &str) -> PyResult<BackendSelection> {
    let choice: BackendChoice = name.parse().map_err(|e| errors::arg("backend", e))?;
    let key = format!("{choice:?}");
    let mut cache = opened()
        .lock()
        .map_err(|_| errors::raise(errors::Class::Runtime, "backend cache poisoned".into()))?;
    if let Some(sel) = cache.get(&key) {
        return Ok(sel.clone());
    }
    let sel = backend::select(choice)
        .map_err(|e| errors::raise(errors::Class::Runtime, e.to_string()))?;
    cache.insert(key, sel.clone());
    Ok(sel)
}

/// `geofield.info()`: the version, the backend `"auto"` picks and why, and the GPU (if any).
#[pyfunction]
#[pyo3(signature = (device = 0))]
pub fn info(py: Python<'_>, device: usize) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", env!("CARGO_PKG_VERSION"))?;
    d.set_item("cpu_threads", rayon_threads())?;
    let p = py.detach(|| backend::probe(device));
    d.set_item("cuda_available", p.ok)?;
    d.set_item("cuda_unavailable_reason", p.reason.clone())?;
    d.set_item(
        "cuda_driver_version",
        p.driver_version
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
    )?;
    d.set_item(
        "nvrtc_version",
        p.nvrtc_version.map(|(a, b)| format!("{a}.{b}")),
    )?;
    if let Some(dev) = &p.device {
        let g = PyDict::new(py);
        g.set_item("ordinal", dev.ordinal)?;
        g.set_item("name", dev.name.clone())?;
        g.set_item(
            "compute_capability",
            format!("{}.{}", dev.compute_capability.0, dev.compute_capability.1),
        )?;
        g.set_item("memory_bytes", dev.total_memory_bytes)?;
        g.set_item("multiprocessors", dev.multiprocessors)?;
        d.set_item("device", g)?;
    } else {
        d.set_item("device", py.None())?;
    }
    let auto = if p.ok {
        format!("cuda:{device}")
    } else {
        "cpu".to_string()
    };
    d.set_item("auto_backend", auto)?;
    Ok(d)
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
