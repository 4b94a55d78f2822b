use neuroport::runtime::cuda;
#[test]
fn dump() {
    let name = std::env::var("PTX_NAME").unwrap_or("register".into());
    let src = std::fs::read_to_string(format!("{}/cl/{name}.cl", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let ptx = cuda::compile_ptx(&name, &src, "compute_90").unwrap();
    std::fs::write(format!("/tmp/{name}.ptx"), ptx.to_src()).unwrap();
}
