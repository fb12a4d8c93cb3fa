//! The scratch file the harness made (docs/workload-contract.md, IO_SPEC: `HARNESS_SCRATCH_FILE`):
//! opened for reads and writes, with O_DIRECT when asked, and checked before `ready`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use crate::engine::AlignedBuf;

/// The environment variable naming the file.
pub const ENV: &str = "HARNESS_SCRATCH_FILE";

/// The file's path, or the one-line bad-input message (exit 2) when the variable is unset.
pub fn path_from_env() -> Result<String, String> {
    match std::env::var(ENV) {
        Ok(p) if !p.is_empty() => Ok(p),
        _ => Err(format!(
            "{ENV} is not set: run this suite through the harness, or set it to a file of file_size_mb MiB"
        )),
    }
}

/// Opens `path` for reading and writing (O_DIRECT with `direct`) and checks that it holds
/// `size` bytes and, with `direct`, that an aligned read of `reqsize` bytes works. Errors are
/// one line (a run-time failure, exit 1).
pub fn open(path: &str, size: u64, reqsize: usize, direct: bool) -> Result<File, String> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    let file = options.open(path).map_err(|e| {
        if direct && e.raw_os_error() == Some(libc::EINVAL) {
            format!("O_DIRECT refused by the filesystem of {path} ({e}): set direct=false or dir= to another filesystem")
        } else {
            format!("cannot open the scratch file {path}: {e}")
        }
    })?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot stat the scratch file {path}: {e}"))?
        .len();
    if len < size {
        return Err(format!(
            "the scratch file {path} holds {len} bytes, less than file_size_mb ({size} bytes)"
        ));
    }
    if direct {
        let mut buf = AlignedBuf::new(reqsize);
        file.read_at(buf.as_mut_slice(), 0).map_err(|e| {
            format!("an O_DIRECT read of {reqsize} bytes from {path} failed ({e}): the filesystem needs another alignment or refuses O_DIRECT; set direct=false or reqsize to a multiple of its block size")
        })?;
    }
    Ok(file)
}
