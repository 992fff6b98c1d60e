//! The flock renderer: geometry, light and file output.

use super::*;

fn view(w: u32, h: u32) -> FlockView {
    FlockView {
        width: w,
        height: h,
        world_radius: 30.0,
        yaw_deg: 30.0,
        pitch_deg: 20.0,
        title: None,
    }
}

fn px(f: &FlockFrame, x: usize, y: usize) -> [u8; 3] {
    let i = (y * f.width as usize + x) * 3;
    [f.rgb[i], f.rgb[i + 1], f.rgb[i + 2]]
}

/// Pixels clearly brighter than the background (any channel more than 90 above it): agents
/// and text, not the faint world ring.
fn lit(f: &FlockFrame, x0: usize, x1: usize, y0: usize, y1: usize) -> usize {
    let mut n = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            let p = px(f, x, y);
            if (0..3).any(|k| p[k] > BACKGROUND[k] + 90) {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn frame_has_the_right_size() {
    let f = render_flock(&[], &[], &view(123, 77), "");
    assert_eq!((f.width, f.height), (123, 77));
    assert_eq!(f.rgb.len(), 123 * 77 * 3);
    // Sizes are clamped, never zero.
    let f = render_flock(&[], &[], &view(0, 5), "x");
    assert_eq!((f.width, f.height, f.rgb.len()), (1, 5, 15));
}

#[test]
fn one_agent_at_the_centre_lights_the_centre_only() {
    let v = view(200, 200);
    let empty = render_flock(&[], &[], &v, "");
    assert_eq!(lit(&empty, 80, 120, 80, 120), 0);
    let f = render_flock(&[[0.0; 3]], &[[1.0, 0.0, 0.0]], &v, "step 1  N=1");
    assert!(
        lit(&f, 90, 110, 90, 110) >= 1,
        "agent not drawn at the centre"
    );
    // Everything lit outside the centre is the caption or the world ring (faint).
    for (x0, y0) in [(0, 0), (180, 0), (0, 180), (180, 180)] {
        let corner = lit(&f, x0, x0 + 20, y0, y0 + 20);
        if (x0, y0) == (0, 0) {
            assert!(corner > 0, "caption missing");
        } else {
            assert_eq!(corner, 0, "corner at ({x0}, {y0}) is lit");
            assert_eq!(px(&f, x0 + 10, y0 + 10), BACKGROUND);
        }
    }
    // Outside the caption rows and the centre, nothing is bright.
    let header = TextBlock::new(200, 200, None, "step 1  N=1").height;
    let centre = lit(&f, 90, 110, 90, 110);
    assert_eq!(lit(&f, 0, 200, header, 200), centre);
    // The ring of the world (its top a few rows down) is faint but visible.
    let ring = (0..20).map(|y| px(&empty, 100, y)[2]).max().unwrap();
    assert!(ring > BACKGROUND[2] + 30, "no ring: {ring}");
    assert_eq!(lit(&empty, 0, 200, 0, 200), 0, "the ring is not faint");
}

#[test]
fn off_view_and_nan_agents_do_not_panic() {
    // Camera at (0, 0, 78) looking along -z.
    let v = FlockView {
        title: Some("a title".into()),
        yaw_deg: 0.0,
        pitch_deg: 0.0,
        ..view(64, 48)
    };
    let pos = [
        [f32::NAN, 0.0, 0.0],
        [0.0, f32::INFINITY, 0.0],
        [1e30, 1e30, 1e30],
        [0.0, 0.0, 78.0],  // at the camera
        [0.0, 0.0, 500.0], // behind it
        [-1e6, 0.0, 0.0],
        [5.0, 5.0, 5.0],
    ];
    let fwd = [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [f32::NAN; 3],
        [0.0; 3],
        [0.0, 0.0, 1.0],
        [1.0, 0.0, 0.0],
        [f32::INFINITY, 0.0, 0.0],
    ];
    let f = render_flock(
        &pos,
        &fwd,
        &v,
        "caption that is far too long for the picture",
    );
    assert_eq!(f.rgb.len(), 64 * 48 * 3);
    // Mismatched lengths and odd views are fine too.
    let odd = FlockView {
        world_radius: f32::NAN,
        yaw_deg: f32::INFINITY,
        pitch_deg: 90.0,
        ..view(16, 16)
    };
    render_flock(&pos, &fwd[..2], &odd, "");
}

#[test]
fn order_of_agents_hardly_matters() {
    let v = view(96, 96);
    let pos: Vec<V3> = (0..500)
        .map(|i| {
            let t = i as f32 * 0.37;
            [
                10.0 * t.sin(),
                8.0 * (1.3 * t).cos(),
                12.0 * (0.7 * t).sin(),
            ]
        })
        .collect();
    let fwd: Vec<V3> = pos
        .iter()
        .map(|p| {
            let l = dot(*p, *p).sqrt().max(1e-3);
            [p[0] / l, p[1] / l, p[2] / l]
        })
        .collect();
    let a = render_flock(&pos, &fwd, &v, "");
    let (rp, rf): (Vec<V3>, Vec<V3>) = pos.iter().zip(&fwd).rev().map(|(p, f)| (*p, *f)).unzip();
    let b = render_flock(&rp, &rf, &v, "");
    let worst = a.rgb.iter().zip(&b.rgb).map(|(x, y)| x.abs_diff(*y)).max();
    assert!(worst <= Some(1), "order changed a pixel by {worst:?}");
}

#[test]
fn crowds_do_not_burn_out() {
    // 40,000 agents spread through the ball on a 64 x 64 picture: ~30 per pixel.
    let n = 40_000;
    let pos: Vec<V3> = (0..n)
        .map(|i| {
            let t = i as f32;
            let r = 28.0 * (t / n as f32).cbrt();
            let (a, b) = (t * 2.399_963, (1.0 - 2.0 * (t + 0.5) / n as f32).acos());
            [r * b.sin() * a.cos(), r * b.cos(), r * b.sin() * a.sin()]
        })
        .collect();
    let fwd = vec![[0.0, 0.0, 1.0]; n];
    let f = render_flock(&pos, &fwd, &view(64, 64), "");
    let c = px(&f, 32, 32);
    assert!(c.iter().any(|&v| v > 60), "centre too dark: {c:?}");
    assert!(c.iter().all(|&v| v < 235), "centre burnt out: {c:?}");
}

#[test]
fn gif_round_trip_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let v = view(40, 30);
    let frames: Vec<FlockFrame> = (0..3)
        .map(|i| {
            let p = [i as f32, 0.0, 0.0];
            render_flock(&[p], &[[0.0, 0.0, 1.0]], &v, &format!("step {i}"))
        })
        .collect();
    let path = dir.path().join("flock.gif");
    write_gif(&path, &frames, 4).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(b"GIF89a"));
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut dec = opts.read_info(bytes.as_slice()).unwrap();
    assert_eq!(dec.repeat(), gif::Repeat::Infinite);
    let mut n = 0;
    while let Some(f) = dec.read_next_frame().unwrap() {
        assert_eq!((f.width, f.height, f.delay), (40, 30, 4));
        assert_eq!(f.buffer.len(), 40 * 30 * 4);
        // The background comes back exactly.
        assert_eq!(&f.buffer[4 * (29 * 40 + 39)..][..3], &BACKGROUND);
        n += 1;
    }
    assert_eq!(n, 3);

    // Mismatched sizes: an error naming the file, and no file.
    let bad = dir.path().join("bad.gif");
    let mut mixed = frames.clone();
    mixed.push(render_flock(&[], &[], &view(41, 30), ""));
    let err = write_gif(&bad, &mixed, 4).unwrap_err().to_string();
    assert!(
        err.contains("bad.gif") && err.contains("same size"),
        "{err}"
    );
    assert!(!bad.exists());
    let err = write_gif(&bad, &[], 4).unwrap_err().to_string();
    assert!(err.contains("no frames"), "{err}");
    let mut short = frames[0].clone();
    short.rgb.pop();
    assert!(write_gif(&bad, &[short.clone()], 4).is_err());
    assert!(write_frame_png(&bad, &short).is_err());
    assert!(!bad.exists());
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 1, "temporary files left behind");
}

#[test]
fn png_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let f = render_flock(&[[0.0; 3]], &[[0.0, 1.0, 0.0]], &view(50, 40), "hi");
    let path = dir.path().join("f.png");
    write_frame_png(&path, &f).unwrap();
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (50, 40));
    assert_eq!(&buf[..info.buffer_size()], f.rgb.as_slice());
}

/// Obstacle outlines light a line of pixels; a predator is a saturated red disc at its
/// projected position; an empty overlay changes nothing.
#[test]
fn overlay_draws_outlines_and_predators() {
    let v = view(200, 200);
    let plain = render_flock(&[], &[], &v, "");
    assert_eq!(
        render_flock_scene(&[], &[], &v, "", &FlockOverlay::default()),
        plain
    );
    let seg = FlockOverlay {
        segments: vec![([-20.0, 0.0, 0.0], [20.0, 0.0, 0.0])],
        predators: vec![],
    };
    let f = render_flock_scene(&[], &[], &v, "", &seg);
    let changed = f
        .rgb
        .chunks_exact(3)
        .zip(plain.rgb.chunks_exact(3))
        .filter(|(a, b)| a != b)
        .count();
    assert!(changed >= 50, "a 40 m segment spans many pixels: {changed}");
    let pred = FlockOverlay {
        segments: vec![],
        predators: vec![[0.0, 0.0, 0.0]],
    };
    let f = render_flock_scene(&[], &[], &v, "", &pred);
    let cam = Camera::new(&v, 200, 200, TextBlock::new(200, 200, None, "").height);
    let (x, y, _) = cam.project([0.0, 0.0, 0.0]).unwrap();
    let p = px(&f, x as usize + 2, y as usize);
    assert!(p[0] >= 250 && p[1] <= 40 && p[2] <= 40, "{p:?}");
    let red = f
        .rgb
        .chunks_exact(3)
        .filter(|p| p[0] >= 250 && p[1] <= 40 && p[2] <= 40)
        .count();
    assert!((20..=81).contains(&red), "{red} red pixels");
}
