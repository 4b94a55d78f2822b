//! Every entry file in cl/ serves both dialects: it builds on an OpenCL device (PoCL in CI) and
//! compiles to PTX through NVRTC. Sources are read from the tree, so a new file is covered
//! without registering it here.

use neuroport::runtime::{cuda, opencl::ClDevice, opencl::probe};

fn sources(dir: &str, ext: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(format!("{}/{dir}", env!("CARGO_MANIFEST_DIR")))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().map(|x| x == ext).unwrap_or(false))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    v.sort();
    v
}

/// CI sets NEUROPORT_REQUIRE_NVRTC / NEUROPORT_REQUIRE_OPENCL so a missing runtime fails there
/// instead of skipping.
fn required(var: &str) -> bool {
    std::env::var(var).map(|v| v == "1").unwrap_or(false)
}

#[test]
fn every_cl_file_compiles_to_ptx_with_nvrtc() {
    if !cuda::nvrtc_present() {
        assert!(!required("NEUROPORT_REQUIRE_NVRTC"), "libnvrtc.so.13 not found but NEUROPORT_REQUIRE_NVRTC=1");
        eprintln!("skipped: libnvrtc not found");
        return;
    }
    let srcs = sources("cl", "cl");
    assert!(srcs.len() >= 4);
    for (name, src) in srcs {
        for arch in ["compute_90", "compute_80"] {
            let ptx = cuda::compile_ptx(&name, &src, arch).unwrap_or_else(|e| panic!("{e:#}"));
            assert!(ptx.to_src().contains(".entry"), "{name}.cl produced no kernel entry for CUDA");
        }
    }
}

#[test]
fn every_cl_file_builds_on_opencl() {
    let devices = probe().unwrap_or_default();
    if devices.is_empty() {
        assert!(!required("NEUROPORT_REQUIRE_OPENCL"), "no OpenCL device but NEUROPORT_REQUIRE_OPENCL=1");
        eprintln!("skipped: no OpenCL device");
        return;
    }
    let (_, _, id, info) = devices.into_iter().next().unwrap();
    let dev = ClDevice::open(id, info).unwrap();
    for (name, src) in sources("cl", "cl") {
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        dev.program(leaked, &src).unwrap_or_else(|e| panic!("{e:#}"));
    }
}

#[test]
fn build_failures_carry_the_compiler_log() {
    let broken = "#include \"common/portable.h\"\nNP_KERNEL void k(NP_GLOBAL float *x) { x[0] = undeclared_name; }\n";
    assert!(cuda::nvrtc_present() || !required("NEUROPORT_REQUIRE_NVRTC"), "libnvrtc.so.13 not found but NEUROPORT_REQUIRE_NVRTC=1");
    assert!(!probe().unwrap_or_default().is_empty() || !required("NEUROPORT_REQUIRE_OPENCL"), "no OpenCL device but NEUROPORT_REQUIRE_OPENCL=1");
    if cuda::nvrtc_present() {
        let e = format!("{:#}", cuda::compile_ptx("broken", broken, "compute_90").unwrap_err());
        assert!(e.contains("NVRTC compile of broken.cu failed") && e.contains("undeclared_name"), "{e}");
    }
    if let Some((_, _, id, info)) = probe().unwrap_or_default().into_iter().next() {
        let dev = ClDevice::open(id, info).unwrap();
        let e = format!("{:#}", dev.program("broken", broken).unwrap_err());
        assert!(e.contains("OpenCL build of broken.cl failed") && e.contains("undeclared_name"), "{e}");
    }
}

/// register.cl's program for images with NaN/Inf (src/register/gpu.rs `program(true)`) compiles
/// its finiteness tests in; the loop above builds only the plain program.
#[test]
fn register_nonfinite_program_compiles_to_ptx() {
    if !cuda::nvrtc_present() {
        assert!(!required("NEUROPORT_REQUIRE_NVRTC"), "libnvrtc.so.13 not found but NEUROPORT_REQUIRE_NVRTC=1");
        return;
    }
    let src = format!("#define NP_REG_NONFINITE 1\n{}", include_str!("../cl/register.cl"));
    let plain = cuda::compile_ptx("register", include_str!("../cl/register.cl"), "compute_90").unwrap_or_else(|e| panic!("{e:#}")).to_src();
    let tested = cuda::compile_ptx("register-nonfinite", &src, "compute_90").unwrap_or_else(|e| panic!("{e:#}")).to_src();
    // NP_REG_FINITE's exponent mask (0x7f800000) in the tests' ANDs and compares: more of it where
    // the tests are compiled in (the plain program holds a few for other reasons).
    let mask = |ptx: &str| ptx.matches("2139095040").count();
    assert!(mask(&tested) > mask(&plain), "NP_REG_NONFINITE does not select the finiteness tests: {} against {}", mask(&tested), mask(&plain));
}
