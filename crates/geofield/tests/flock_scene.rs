//! The flock among obstacles and predators: avoidance keeps boids out of solids and inside
//! containers, the predator closes in on its nearest boid, the results do not depend on the
//! thread count, and every backend steps the same bits as the CPU from the same snapshot.
//!
//! Each test body runs on the CPU and, with a GPU, on CUDA (`backends::for_each_backend`: the
//! CUDA run skips with a notice without a GPU, fails with `GEOFIELD_REQUIRE_GPU=1`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use geofield::Backend;
use geofield::bench::flock::step_detail;
use geofield::flock::{
    Flock, FlockIndex, FlockParams, FlockState, NeighborMode, Obstacle, Predator, Scene, SeenFrom,
    Start,
};

mod backends;
use backends::for_each_backend;

fn sphere(centre: [f32; 3], radius: f32, seen_from: SeenFrom) -> Obstacle {
    Obstacle::Sphere {
        centre,
        radius,
        seen_from,
    }
}

fn scene(obstacles: Vec<Obstacle>) -> Scene {
    Scene {
        obstacles,
        ..Scene::default()
    }
}

/// One boid at `p` flying along +x at full speed (9).
fn lone_boid(p: [f32; 3]) -> FlockState {
    FlockState::from_rows(&[p[0], p[1], p[2], 9.0, 0.0, 0.0]).unwrap()
}

/// Steps `steps` steps and returns the most boids inside a solid of `judge` at any step, and
/// the first such boid seen (step, position, heading, speed) for the failure message.
fn worst_collisions(fl: &mut Flock, judge: &Scene, steps: usize) -> (usize, String) {
    let mut worst = 0;
    let mut first = String::new();
    for step in 0..=steps {
        if step > 0 {
            fl.step(1).unwrap();
        }
        let s = fl.state().unwrap();
        let c = judge.collisions(&s);
        if c > 0 && first.is_empty() {
            let i = (0..s.len())
                .find(|&i| judge.inside_solid(s.pos[i].map(f64::from)))
                .unwrap();
            first = format!(
                "step {step}: agent {i} at {:?} heading {:?} speed {}",
                s.pos[i], s.fwd[i], s.speed[i]
            );
        }
        worst = worst.max(c);
    }
    (worst, first)
}

/// A lone boid flying straight at a solid sphere (head-on, and slightly off-axis) turns away and
/// never enters it; without the sphere the same boid flies straight through where it would be.
#[test]
fn a_boid_heading_at_a_sphere_turns_away() {
    for_each_backend(|be| {
        let ball = scene(vec![sphere([0.0; 3], 10.0, SeenFrom::Outside)]);
        for y in [0.0f32, 0.3, 4.0] {
            let p = FlockParams::new(200.0);
            let mut fl = Flock::with_scene(be, p, &ball, lone_boid([-40.0, y, 0.0])).unwrap();
            let (worst, first) = worst_collisions(&mut fl, &ball, 600);
            assert_eq!(worst, 0, "y = {y}: {first}");
            // It went round: it is now past or beside the sphere, not stuck in front of it.
            let s = fl.state().unwrap();
            assert!(s.speed[0] > 8.0, "y = {y}: speed {}", s.speed[0]);
            let mut free = Flock::new(be, p, lone_boid([-40.0, y, 0.0])).unwrap();
            assert!(worst_collisions(&mut free, &ball, 600).0 > 0, "y = {y}");
        }
    });
}

/// A container sphere keeps a flock inside; a solid box and a floor plane keep it out.
#[test]
fn containers_and_solids_hold() {
    for_each_backend(|be| {
        let world = 60.0;
        let inside = scene(vec![sphere([0.0; 3], 35.0, SeenFrom::Inside)]);
        let p = FlockParams::new(world);
        let s0 = FlockState::init(300, Start::Dense, world, 3);
        let mut fl = Flock::with_scene(be, p, &inside, s0.clone()).unwrap();
        let (worst, first) = worst_collisions(&mut fl, &inside, 900);
        assert_eq!(worst, 0, "{first}");
        // Without the container the same flock leaves that sphere.
        let mut free = Flock::new(be, p, s0.clone()).unwrap();
        assert!(worst_collisions(&mut free, &inside, 900).0 > 0);

        let solids = scene(vec![
            Obstacle::Box {
                centre: [0.0, 0.0, 0.0],
                size: [12.0, 12.0, 12.0],
                forward: None,
                up: None,
                seen_from: SeenFrom::Outside,
            },
            Obstacle::Plane {
                point: [0.0, -22.0, 0.0],
                normal: [0.0, 1.0, 0.0],
                seen_from: SeenFrom::Outside,
            },
            sphere([0.0; 3], 45.0, SeenFrom::Inside),
        ]);
        // Start around the box: uniform in the world ball, minus the box and the floor.
        let mut s = FlockState::init(600, Start::Uniform, 40.0, 5);
        let keep: Vec<usize> = (0..s.len())
            .filter(|&i| {
                let q = s.pos[i].map(f64::from);
                !solids.inside_solid(q) && q[1] > -20.0 && q.iter().all(|v| v.abs() > 9.0)
            })
            .collect();
        s = FlockState {
            pos: keep.iter().map(|&i| s.pos[i]).collect(),
            fwd: keep.iter().map(|&i| s.fwd[i]).collect(),
            speed: keep.iter().map(|&i| s.speed[i]).collect(),
            acc: keep.iter().map(|&i| s.acc[i]).collect(),
        };
        let mut fl = Flock::with_scene(be, p, &solids, s).unwrap();
        let (worst, first) = worst_collisions(&mut fl, &solids, 600);
        assert_eq!(worst, 0, "{first}");
    });
}

fn predator_scene() -> Scene {
    Scene {
        predators: vec![Predator {
            start: [40.0, 0.0, 0.0],
            heading: [-1.0, 0.0, 0.0],
            speed: Some(6.0),
            max_speed: 12.0,
            max_force: 27.0,
            max_prediction_s: 20.0,
        }],
        ..Scene::default()
    }
}

/// The predator closes in on the flock (its nearest-boid distance falls from ~20 to a few
/// metres), and boids within the evasion radius are pushed away from it.
#[test]
fn the_predator_catches_up_with_its_nearest_boid() {
    for_each_backend(|be| {
        let world = 80.0;
        let sc = predator_scene();
        let s0 = FlockState::init(400, Start::Dense, world, 7);
        let mut fl = Flock::with_scene(be, FlockParams::new(world), &sc, s0.clone()).unwrap();
        let d0 = Scene::predator_distances(&s0, &fl.predators().unwrap())[0];
        assert!(d0 > 19.0, "{d0}");
        let mut closest = d0;
        for _ in 0..40 {
            fl.step(15).unwrap();
            let d = Scene::predator_distances(&fl.state().unwrap(), &fl.predators().unwrap())[0];
            closest = closest.min(d);
        }
        assert!(closest < 3.0, "closest approach {closest} from {d0}");
        let pr = fl.predators().unwrap();
        assert!(pr.speed[0] <= 12.0 * (1.0 + 1e-6));
        // Evasion: from the same start, boids near the predator move away from it faster
        // with evasion than with weight 0.
        let mut calm = sc.clone();
        calm.evasion.weight = 0.0;
        let spread = |sc: &Scene| {
            let mut f = Flock::with_scene(be, FlockParams::new(world), sc, s0.clone()).unwrap();
            f.step(90).unwrap();
            let s = f.state().unwrap();
            let m = f.predators().unwrap().pos[0];
            let mut d: Vec<f32> = s
                .pos
                .iter()
                .map(|p| {
                    ((p[0] - m[0]).powi(2) + (p[1] - m[1]).powi(2) + (p[2] - m[2]).powi(2)).sqrt()
                })
                .collect();
            d.sort_by(f32::total_cmp);
            d[..20].iter().sum::<f32>() / 20.0
        };
        let (fleeing, still) = (spread(&sc), spread(&calm));
        assert!(
            fleeing > still,
            "20 nearest boids: {fleeing} with evasion, {still} without"
        );
    });
}

/// The same run on 1 and 2 rayon threads gives the same bits (CPU).
#[test]
fn scene_runs_do_not_depend_on_the_thread_count() {
    let mut sc = predator_scene();
    sc.obstacles = vec![
        sphere([0.0, 0.0, 0.0], 8.0, SeenFrom::Outside),
        sphere([0.0; 3], 38.0, SeenFrom::Inside),
    ];
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let s0 = FlockState::init(1500, Start::Uniform, 30.0, 11);
            let mut f = Flock::with_scene(&Backend::Cpu, FlockParams::new(40.0), &sc, s0).unwrap();
            f.step(120).unwrap();
            (f.state().unwrap(), f.predators().unwrap())
        })
    };
    let (a, pa) = run(1);
    let (b, pb) = run(2);
    assert_eq!(a, b);
    assert_eq!(pa, pb);
}

/// One step from the same snapshots (among obstacles of every kind, with predators): the same
/// neighbours, forces and state bits as the CPU on every backend and index, nearest mode.
#[test]
fn scene_step_matches_cpu() {
    for_each_backend(|be| {
        let mut sc = predator_scene();
        sc.predators.push(Predator {
            start: [-5.0, 3.0, 2.0],
            heading: [0.0, 1.0, 1.0],
            speed: None,
            max_speed: 10.0,
            max_force: 20.0,
            max_prediction_s: 2.0,
        });
        sc.obstacles = vec![
            sphere([5.0, 0.0, 0.0], 6.0, SeenFrom::Outside),
            sphere([0.0; 3], 28.0, SeenFrom::Inside),
            Obstacle::Box {
                centre: [-8.0, 2.0, 0.0],
                size: [4.0, 6.0, 5.0],
                forward: Some([1.0, 1.0, 0.0]),
                up: None,
                seen_from: SeenFrom::Outside,
            },
            Obstacle::Rectangle {
                centre: [0.0, 10.0, 0.0],
                size: [10.0, 8.0],
                normal: [0.0, 1.0, 0.2],
                up: None,
                seen_from: SeenFrom::Both,
            },
            Obstacle::Plane {
                point: [0.0, -15.0, 0.0],
                normal: [0.0, 1.0, 0.0],
                seen_from: SeenFrom::Outside,
            },
        ];
        let mut snaps = vec![FlockState::init(3000, Start::Uniform, 30.0, 21)];
        let mut f = Flock::with_scene(
            &Backend::Cpu,
            FlockParams::new(30.0),
            &sc,
            FlockState::init(2000, Start::Dense, 30.0, 22),
        )
        .unwrap();
        f.step(200).unwrap();
        snaps.push(f.state().unwrap());
        for s in &snaps {
            for index in [FlockIndex::Uniform, FlockIndex::Dynamic, FlockIndex::Brute] {
                let mut p = FlockParams::new(30.0);
                p.index = index;
                p.mode = NeighborMode::Nearest { k: 7 };
                let one = |be: &Backend| {
                    let mut f = Flock::with_scene(be, p, &sc, s.clone()).unwrap();
                    let d = step_detail(&mut f).unwrap();
                    f.step(3).unwrap();
                    (d, f.state().unwrap(), f.predators().unwrap())
                };
                let (dc, sc1, pc) = one(&Backend::Cpu);
                let (dg, sg, pg) = one(be);
                assert_eq!(dc.neighbors, dg.neighbors, "{index:?}: neighbours");
                assert_eq!(dc.force, dg.force, "{index:?}: forces");
                assert_eq!(sc1, sg, "{index:?}: state after 4 steps");
                assert_eq!(pc, pg, "{index:?}: predators after 4 steps");
            }
        }
    });
}
