#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use crate::forest::output::test_support;

/// Count the image descriptors of a GIF by walking its blocks; returns (width, height,
/// frames).
fn gif_frames(b: &[u8]) -> (u16, u16, usize) {
    assert_eq!(&b[..6], b"GIF89a");
    let w = u16::from_le_bytes([b[6], b[7]]);
    let h = u16::from_le_bytes([b[8], b[9]]);
    let mut at = 13;
    if b[10] & 0x80 != 0 {
        at += 3 << ((b[10] & 7) + 1);
    }
    let skip_sub_blocks = |at: &mut usize| {
        while b[*at] != 0 {
            *at += usize::from(b[*at]) + 1;
        }
        *at += 1;
    };
    let mut frames = 0;
    loop {
        match b[at] {
            0x21 => {
                at += 2;
                skip_sub_blocks(&mut at);
            }
            0x2C => {
                frames += 1;
                let flags = b[at + 9];
                at += 10;
                if flags & 0x80 != 0 {
                    at += 3 << ((flags & 7) + 1);
                }
                at += 1; // LZW minimum code size
                skip_sub_blocks(&mut at);
            }
            0x3B => break,
            other => panic!("unexpected GIF block {other:#x} at {at}"),
        }
    }
    assert_eq!(at + 1, b.len());
    (w, h, frames)
}

fn year<'a>(y: u32, trees: &'a crate::forest::trees::Trees) -> Year<'a> {
    Year::new(y, Vec::new(), Vec::new(), &[], trees)
}

fn grid() -> GridSpec {
    GridSpec {
        x_min_m: 100.0,
        y_max_m: 50.0,
        cell_size_m: 1.0,
        cols: 60,
        rows: 40,
    }
}

#[test]
fn frames_show_the_trees_and_write_a_gif() {
    let params = test_support::params();
    // An adult of species 1 (DBH 40 cm: radius 4 m = 40 px) at the centre, a sapling of
    // species 2 and a seedling of species 3 away from it, a tree of an unknown species.
    let trees = test_support::trees(&[
        (130.0, 30.0, 40.0, 1),
        (110.0, 20.0, 1.5, 2),
        (150.0, 15.0, 0.5, 3),
        (120.0, 40.0, 30.0, 9),
    ]);
    let mut frames = StandFrames::new(&grid(), 4);
    assert_eq!(frames.size_px(), (600, 400));
    for y in 0..5 {
        frames.push(&year(y, &trees), &params).unwrap();
    }
    assert_eq!(frames.len(), 5);
    let f = &frames.frames[4];
    let at = |x: f64, y: f64| f[((50.0 - y) * 10.0) as usize * 600 + ((x - 100.0) * 10.0) as usize];
    let hue = |s: u8| FIRST_HUE + 2 * s;
    assert_eq!(at(130.0, 30.0), hue(1));
    assert_eq!(at(133.95, 30.0), hue(1) + 1); // the rim
    assert_eq!(at(134.2, 30.0), BACKGROUND);
    assert_eq!(at(110.0, 20.0), hue(2));
    assert_eq!(at(109.95, 20.05), hue(2)); // 2 x 2 pixels
    assert_eq!(at(150.0, 15.0), hue(3));
    assert_eq!(at(150.11, 15.0), BACKGROUND); // one pixel
    assert_eq!(at(120.0, 40.0), BACKGROUND);
    // The year label: "4" in the top-left corner.
    assert_eq!(f[5 * 600 + 5], LABEL_BOX);
    assert!(f[..30 * 600].contains(&INK));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stand.gif");
    frames.write_gif(&path).unwrap();
    assert_eq!(gif_frames(&std::fs::read(&path).unwrap()), (600, 400, 5));
}

#[test]
fn long_runs_keep_at_most_max_frames_spread_over_the_run() {
    let params = test_support::params();
    let trees = test_support::trees(&[(130.0, 30.0, 40.0, 0)]);
    let tiny = GridSpec {
        rows: 1,
        cols: 2,
        ..grid()
    };
    let mut frames = StandFrames::new(&tiny, 4);
    for y in 0..=450 {
        frames.push(&year(y, &trees), &params).unwrap();
    }
    assert!(frames.len() <= MAX_FRAMES && frames.len() > MAX_FRAMES / 2);
    let years = frames.years();
    assert_eq!(years[0], 0);
    assert!(years.windows(2).all(|w| w[1] - w[0] == 4), "{years:?}");
    assert_eq!(*years.last().unwrap(), 448);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.gif");
    frames.write_gif(&path).unwrap();
    let (_, _, n) = gif_frames(&std::fs::read(&path).unwrap());
    assert_eq!(n, frames.len());
}
