//! The release binary's debug sections (the line tables that let a backtrace name file and line)
//! are zlib-compressed by the linker: the installed binary is half the size, and a backtrace
//! still reads them. Test and dev builds are left alone, so their links stay fast.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && linux {
        println!("cargo:rustc-link-arg-bins=-Wl,--compress-debug-sections=zlib");
    }
}
