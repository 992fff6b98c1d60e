//! `geofield.Flock`: OpenSteer's boids; on the GPU the state stays resident between steps.

use geofield::flock::{self, Flock as Sim, FlockIndex, FlockParams, NeighborMode, Scene, Start};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::backend::open;
use crate::errors;
use crate::interrupt::run_interruptible;

/// A running flock. Build with `Flock(n, mode, start, seed, backend, world_radius, index)`.
#[pyclass(module = "geofield._native", name = "Flock", unsendable)]
pub struct Flock {
    sim: Sim,
    world_radius: f32,
    backend: String,
    scene: Scene,
}

/// The scene from a file or an OpenSteer preset (`scene_path`: `opensteer:NAME`) or JSON text
/// (`scene_json`, the file's format).
fn scene_from(
    scene_path: Option<&str>,
    scene_json: Option<&str>,
    world_radius: f32,
) -> PyResult<Scene> {
    match (scene_path, scene_json) {
        (Some(p), _) => match p.strip_prefix("opensteer:") {
            Some(name) => Scene::opensteer(name, world_radius).map_err(errors::lib),
            None => geofield::flock::io::read_scene(std::path::Path::new(p)).map_err(errors::input),
        },
        (None, Some(j)) => {
            let s: Scene = serde_json::from_str(j)
                .map_err(|e| errors::arg("scene", format!("not a valid scene: {e}")))?;
            s.validate().map_err(errors::lib)?;
            Ok(s)
        }
        (None, None) => Ok(Scene::default()),
    }
}

fn mode(s: &str) -> PyResult<NeighborMode> {
    if s == "radius" {
        return Ok(NeighborMode::Radius);
    }
    if let Some(k) = s.strip_prefix("nearest") {
        let k = if k.is_empty() {
            Ok(7)
        } else {
            k.parse::<usize>()
        };
        if let Ok(k) = k {
            return Ok(NeighborMode::Nearest { k });
        }
    }
    Err(errors::arg(
        "mode",
        format!("{s:?} is not 'nearest7' (or 'nearestK') or 'radius'"),
    ))
}

#[pymethods]
impl Flock {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (n, mode_name, start, seed, backend, world_radius, index, scene_path = None, scene_json = None, n_predators = 0))]
    fn new(
        py: Python<'_>,
        n: usize,
        mode_name: &str,
        start: &str,
        seed: u64,
        backend: &str,
        world_radius: Option<f32>,
        index: &str,
        scene_path: Option<&str>,
        scene_json: Option<&str>,
        n_predators: usize,
    ) -> PyResult<Self> {
        let start = match start {
            "dense" => Start::Dense,
            "uniform" => Start::Uniform,
            _ => {
                return Err(errors::arg(
                    "start",
                    format!("{start:?} is not 'dense' or 'uniform'"),
                ));
            }
        };
        let index = match index {
            "uniform" => FlockIndex::Uniform,
            "dynamic" => FlockIndex::Dynamic,
            "brute" => FlockIndex::Brute,
            _ => {
                return Err(errors::arg(
                    "index",
                    format!("{index:?} is not 'uniform', 'dynamic' or 'brute'"),
                ));
            }
        };
        let world_radius = world_radius.unwrap_or_else(|| flock::default_world_radius(n));
        let mut scene = scene_from(scene_path, scene_json, world_radius)?;
        scene.add_predators(n_predators, world_radius);
        let mut params = FlockParams::new(world_radius);
        params.mode = mode(mode_name)?;
        params.index = index;
        let state = scene
            .start_state(n, start, world_radius, seed)
            .map_err(errors::lib)?;
        let sel = open(backend)?;
        let be = sel.backend.clone();
        let sim = py
            .detach(|| Sim::with_scene(&be, params, &scene, state))
            .map_err(errors::lib)?;
        Ok(Self {
            sim,
            world_radius,
            backend: be.label(),
            scene,
        })
    }

    /// Advance `steps` steps (the GIL is released while stepping). Interruptible (Ctrl-C) between
    /// steps: the flock keeps the steps it finished. `progress` is called with the fraction of
    /// the steps done.
    #[pyo3(signature = (steps = 1, progress = None))]
    fn step(
        &mut self,
        py: Python<'_>,
        steps: usize,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let sim = &mut self.sim;
        let n = steps.max(1) as f64;
        run_interruptible(py, progress.as_ref(), |cancel, sink| {
            sim.step_with_progress(steps, &mut |done| sink.set(done as f64 / n), cancel)
        })
    }

    /// The state as an (n, 6) float32 array: position x, y, z and velocity (heading × speed).
    #[getter]
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.sim.state().map_err(errors::lib)?;
        let n = s.len();
        let mut rows = Vec::with_capacity(n * 6);
        for i in 0..n {
            rows.extend_from_slice(&s.pos[i]);
            for c in 0..3 {
                rows.push(s.fwd[i][c] * s.speed[i]);
            }
        }
        Ok(PyArray1::from_vec(py, rows).reshape([n, 6])?.into_any())
    }

    /// The predators as an (m, 6) float32 array: position x, y, z and velocity.
    #[getter]
    fn predators<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.sim.predators().map_err(errors::lib)?;
        let rows = s.to_rows();
        Ok(PyArray1::from_vec(py, rows)
            .reshape([s.len(), 6])?
            .into_any())
    }

    /// Agents now inside a solid obstacle (0 without obstacles).
    fn collisions(&self) -> PyResult<usize> {
        let s = self.sim.state().map_err(errors::lib)?;
        Ok(self.scene.collisions(&s))
    }

    /// Each predator's distance to its nearest agent, m.
    fn predator_distances(&self) -> PyResult<Vec<f64>> {
        let s = self.sim.state().map_err(errors::lib)?;
        let p = self.sim.predators().map_err(errors::lib)?;
        Ok(Scene::predator_distances(&s, &p))
    }

    /// Steps taken so far.
    #[getter]
    fn steps_taken(&self) -> u64 {
        self.sim.steps_taken()
    }

    /// The backend the flock runs on ("cpu" or "cuda:N").
    #[getter]
    fn backend(&self) -> String {
        self.backend.clone()
    }

    /// The world radius (agents leaving it re-enter on the opposite side).
    #[getter]
    fn world_radius(&self) -> f32 {
        self.world_radius
    }

    /// Order measures of the current state (polarisation, local alignment, nearest-neighbour
    /// distance, speed, radius fraction).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.sim.state().map_err(errors::lib)?;
        let st = py.detach(|| flock::stats(&s, self.world_radius));
        let d = PyDict::new(py);
        d.set_item("agents", st.agents)?;
        d.set_item("polarisation", st.polarisation)?;
        d.set_item("local_alignment", st.local_alignment)?;
        d.set_item("mean_nn_distance", st.mean_nn_distance)?;
        d.set_item("mean_speed", st.mean_speed)?;
        d.set_item("mean_radius_fraction", st.mean_radius_fraction)?;
        Ok(d)
    }
}
