//! Library errors as Python exceptions. The classes live in `geofield/_errors.py` so that they
//! can subclass both `GeofieldError` and the built-in they refine (`ValueError`, `OSError`,
//! `RuntimeError`); the message is the library's own.

use geofield::{GeofieldError, InputError};
use pyo3::prelude::*;
use pyo3::types::PyAnyMethods;

/// Which Python class an error becomes.
#[derive(Clone, Copy)]
pub enum Class {
    /// Bad values or arguments: `geofield.GeofieldValueError` (a `ValueError`).
    Value,
    /// A file that cannot be read or written: `geofield.GeofieldIOError` (an `OSError`).
    Io,
    /// The device or an unsupported combination: `geofield.GeofieldRuntimeError`.
    Runtime,
}

/// A Python exception of `class` with `message`, built from the classes in `geofield._errors`.
pub fn raise(class: Class, message: String) -> PyErr {
    Python::attach(|py| {
        let name = match class {
            Class::Value => "GeofieldValueError",
            Class::Io => "GeofieldIOError",
            Class::Runtime => "GeofieldRuntimeError",
        };
        let made = py
            .import("geofield._errors")
            .and_then(|m| m.getattr(name))
            .and_then(|cls| cls.call1((message.clone(),)));
        match made {
            Ok(obj) => PyErr::from_value(obj),
            // The package is broken (the module is missing): still say what went wrong.
            Err(_) => pyo3::exceptions::PyValueError::new_err(message),
        }
    })
}

/// The message of an error and its causes, as the CLI prints them (without repeats).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let m = s.to_string();
        if !out.contains(&m) {
            out.push_str(": ");
            out.push_str(&m);
        }
        source = s.source();
    }
    out
}

/// A library error as the matching Python exception.
pub fn lib(e: GeofieldError) -> PyErr {
    let class = match &e {
        GeofieldError::Cuda(_) | GeofieldError::Unsupported(_) | GeofieldError::Cancelled => {
            Class::Runtime
        }
        _ => Class::Value,
    };
    raise(class, chain(&e))
}

/// An input-file error (file, line, field) as the matching Python exception.
pub fn input(e: InputError) -> PyErr {
    let class = match &e {
        InputError::File(geofield_io::IoError::Read { .. })
        | InputError::File(geofield_io::IoError::Write { .. })
        | InputError::File(geofield_io::IoError::DirectoryMissing { .. }) => Class::Io,
        _ => Class::Value,
    };
    raise(class, chain(&e))
}

/// A bad argument of the Python call, named.
pub fn arg(name: &str, reason: impl std::fmt::Display) -> PyErr {
    raise(Class::Value, format!("{name}: {reason}"))
}

/// Issues `message` as a Python `UserWarning` (a note of a reader: what was assumed).
pub fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let msg = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        &msg,
        1,
    )
}
