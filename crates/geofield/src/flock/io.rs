//! Flock files (feature `io`): the state as an `.npy` array of shape (N, 6) (x, y, z, vx, vy,
//! vz per agent, in agent-id order), and pictures of the flock: one frame per snapshot, drawn in
//! perspective from a fixed camera, written as PNG files or an animated GIF.

use std::path::{Path, PathBuf};

use super::{FlockState, Scene};
use crate::input_error::InputError;

pub use geofield_io::{FlockFrame, FlockOverlay, FlockView};

/// Read a scene file: JSON as [`Scene`] describes it (unknown keys refused), e.g.
///
/// ```json
/// {"obstacles": [{"sphere": {"centre": [0, 0, 0], "radius": 25, "seen_from": "outside"}},
///                {"box": {"centre": [40, 0, 0], "size": [10, 20, 10]}},
///                {"rectangle": {"centre": [0, 30, 0], "size": [40, 20], "normal": [0, 1, 0]}},
///                {"plane": {"point": [0, -45, 0], "normal": [0, 1, 0]}}],
///  "predators": [{"start": [60, 0, 0], "max_speed": 12}],
///  "evasion": {"radius": 20, "weight": 30, "max_prediction_s": 1},
///  "avoidance": {"min_time_to_collision_s": 1, "body_radius": 0.5}}
/// ```
///
/// Errors name the file, and the line and column (syntax, unknown or missing keys) or the
/// field (`obstacles[1].box.size[2] = 0.0: expected a finite number > 0`).
pub fn read_scene(path: &Path) -> Result<Scene, InputError> {
    let invalid = |reason: String| InputError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(format!("cannot read the scene file: {e}")))?;
    let scene: Scene =
        serde_json::from_str(&text).map_err(|e| invalid(format!("not a valid scene: {e}")))?;
    scene.validate().map_err(|e| invalid(e.to_string()))?;
    Ok(scene)
}

/// Hundredths of a second each GIF frame shows: 25 frames per second.
pub const GIF_DELAY_CS: u16 = 4;

/// Read a state saved by [`write_state`] (or any `.npy` of shape (N, 6), float32 or float64;
/// f64 values are rounded to f32). Headings are velocity / speed, accelerations zero; errors
/// name the file and, for a non-finite value, the agent and column.
pub fn read_state(path: &Path) -> Result<FlockState, InputError> {
    let invalid = |reason: String| InputError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let a = geofield_io::read_npy(path)?;
    if a.shape.len() != 2 || a.shape[1] != 6 {
        return Err(invalid(format!(
            "expected an array of shape (N, 6) (x, y, z, vx, vy, vz), got {:?}",
            a.shape
        )));
    }
    let rows: Vec<f32> = match a.data {
        geofield_io::NpyData::F32(v) => v,
        geofield_io::NpyData::F64(v) => v.iter().map(|&x| x as f32).collect(),
        _ => return Err(invalid("expected float32 or float64 values".into())),
    };
    FlockState::from_rows(&rows).map_err(|e| invalid(e.to_string()))
}

/// Write `state` as an (N, 6) float32 `.npy`: positions then velocities, in agent-id order.
pub fn write_state(path: &Path, state: &FlockState) -> Result<(), InputError> {
    Ok(geofield_io::write_npy_f32(
        path,
        &[state.len(), 6],
        &state.to_rows(),
    )?)
}

/// The camera every flock picture uses: a square of `size_px` pixels looking at the world ball
/// of radius `world_radius` from 30° yaw and 20° pitch, titled with the number of agents.
pub fn view(size_px: u32, world_radius: f32, agents: usize) -> FlockView {
    FlockView {
        width: size_px,
        height: size_px,
        world_radius,
        yaw_deg: 30.0,
        pitch_deg: 20.0,
        title: Some(format!("geofield flock: {agents} boids")),
    }
}

/// Draw `state` after `step` steps of `dt` seconds, captioned with the step, the simulated
/// time and the polarisation (see [`super::FlockStats`]).
pub fn render_frame(
    state: &FlockState,
    view: &FlockView,
    step: u64,
    dt: f32,
    polarisation: f64,
) -> FlockFrame {
    let caption = format!(
        "step {step}  t={:.1}s  polarisation {polarisation:.2}",
        step as f64 * f64::from(dt)
    );
    geofield_io::render_flock(&state.pos, &state.fwd, view, &caption)
}

/// [`render_frame`] with the obstacles and predators of `overlay` drawn in.
pub fn render_scene_frame(
    state: &FlockState,
    overlay: &FlockOverlay,
    view: &FlockView,
    step: u64,
    dt: f32,
    polarisation: f64,
) -> FlockFrame {
    let caption = format!(
        "step {step}  t={:.1}s  polarisation {polarisation:.2}",
        step as f64 * f64::from(dt)
    );
    geofield_io::render_flock_scene(&state.pos, &state.fwd, view, &caption, overlay)
}

/// The frames of a run: each snapshot drawn with one view, written as a PNG file
/// (`frame_000040.png` after 40 steps) into a folder and/or kept for an animated GIF.
#[derive(Debug, Clone)]
pub struct Frames {
    view: FlockView,
    dt: f32,
    folder: Option<PathBuf>,
    for_gif: bool,
    kept: Vec<FlockFrame>,
    names: Vec<String>,
    /// Obstacle outlines drawn in every frame.
    outline: Vec<([f32; 3], [f32; 3])>,
}

impl Frames {
    /// Frames drawn with `view` of a flock stepping `dt` seconds, written into `folder` when
    /// given (it must exist) and kept for [`Frames::write_gif`] when `for_gif`.
    pub fn new(view: FlockView, dt: f32, folder: Option<PathBuf>, for_gif: bool) -> Self {
        Frames {
            view,
            dt,
            folder,
            for_gif,
            kept: Vec::new(),
            names: Vec::new(),
            outline: Vec::new(),
        }
    }

    /// Draw the obstacles of `scene` (outlines; planes as squares of the world's diameter) in
    /// every frame.
    pub fn with_scene(mut self, scene: &Scene) -> Self {
        self.outline = super::scene::outline(scene, self.view.world_radius);
        self
    }

    /// Draw `state` after `step` steps ([`render_frame`]), write it into the folder and keep it
    /// for the GIF, as asked.
    pub fn record(
        &mut self,
        state: &FlockState,
        step: u64,
        polarisation: f64,
    ) -> Result<(), InputError> {
        self.record_with(state, &[], step, polarisation)
    }

    /// [`Frames::record`] with the predators at `predators` drawn in (red discs).
    pub fn record_with(
        &mut self,
        state: &FlockState,
        predators: &[[f32; 3]],
        step: u64,
        polarisation: f64,
    ) -> Result<(), InputError> {
        let overlay = FlockOverlay {
            segments: self.outline.clone(),
            predators: predators.to_vec(),
        };
        let frame = render_scene_frame(state, &overlay, &self.view, step, self.dt, polarisation);
        if let Some(dir) = &self.folder {
            let name = format!("frame_{step:06}.png");
            geofield_io::write_frame_png(&dir.join(&name), &frame)?;
            self.names.push(name);
        }
        if self.for_gif {
            self.kept.push(frame);
        }
        Ok(())
    }

    /// The names of the PNG files written into the folder so far, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Write the kept frames as an animated GIF that loops forever at 25 frames per second.
    pub fn write_gif(&self, path: &Path) -> Result<(), InputError> {
        Ok(geofield_io::write_gif(path, &self.kept, GIF_DELAY_CS)?)
    }
}
