//! Writing output files: every file a tool of this project writes goes through [`write`] or
//! [`write_with`].
//!
//! The rule, as `mlir-opt` and LLVM's `ToolOutputFile` follow it:
//!
//! - `-` is standard output;
//! - a symbolic link is followed to what it names (a dangling link names the file to create), and
//!   the rules below apply to that;
//! - a regular file, or a path that does not exist yet, is replaced atomically: the contents go
//!   to a fresh temporary file in the same directory, which is renamed over the target only when
//!   everything was written, so a failure never leaves a half-written output and an existing
//!   target keeps its bytes; the replacement keeps the old file's permission bits;
//! - a character or block device (`/dev/null`), a FIFO or a Unix socket is opened and written
//!   in place, never replaced;
//! - a directory, a read-only file, or a path whose directory is missing is an error, and
//!   nothing is created or touched.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Cursor, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why an output could not be written. Its `Display` names the path and the reason.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write '{}': it is a directory", .0.display())]
    IsDirectory(PathBuf),
    #[error("cannot write '{}': the file is read-only", .0.display())]
    ReadOnly(PathBuf),
    #[error("cannot write '{}': directory '{}' does not exist", .path.display(), .dir.display())]
    MissingDirectory { path: PathBuf, dir: PathBuf },
    #[error("cannot write '{}': too many levels of symbolic links", .0.display())]
    LinkLoop(PathBuf),
    #[error("cannot write '{}': {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl OutputError {
    fn io(path: &Path, source: io::Error) -> OutputError {
        OutputError::Io { path: path.to_path_buf(), source }
    }
}

/// Where the bytes of an output go, decided before anything is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-`.
    Stdout,
    /// A regular file or a path to create: written to a temporary file, then renamed over it.
    Replace(PathBuf),
    /// A character or block device or a FIFO: opened for writing and written in place.
    InPlace(PathBuf),
    /// A Unix socket: connected to and written.
    Socket(PathBuf),
}

/// How many symbolic links are followed before a path is refused (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Decides how `path` is written, without writing or creating anything.
pub fn classify(path: &Path) -> Result<Target, OutputError> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    let path = resolve_links(path)?;
    match fs::metadata(&path) {
        Ok(meta) => {
            let ft = meta.file_type();
            if ft.is_dir() {
                return Err(OutputError::IsDirectory(path));
            }
            if ft.is_file() {
                if meta.permissions().readonly() {
                    return Err(OutputError::ReadOnly(path));
                }
                return Ok(Target::Replace(path));
            }
            if is_socket(&ft) {
                return Ok(Target::Socket(path));
            }
            Ok(Target::InPlace(path))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let dir = parent_dir(&path);
            match fs::metadata(&dir) {
                Ok(m) if m.is_dir() => Ok(Target::Replace(path)),
                Ok(_) => Err(OutputError::io(&path, io::Error::other(format!("'{}' is not a directory", dir.display())))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Err(OutputError::MissingDirectory { path, dir }),
                Err(e) => Err(OutputError::io(&path, e)),
            }
        }
        Err(e) => Err(OutputError::io(&path, e)),
    }
}

/// Writes `contents` to `path` by the module's rule.
pub fn write(path: &Path, contents: &[u8]) -> Result<(), OutputError> {
    write_with(path, |sink| sink.write_all(contents).map_err(|e| OutputError::io(path, e)))
}

/// Writes the output `fill` produces to `path` by the module's rule. `fill` receives a sink
/// that can also seek (a zip writer needs to); for in-place targets and standard output the
/// sink is a memory buffer copied out once `fill` succeeds. When `fill` fails, nothing is
/// written: the target is untouched and the temporary file is removed.
pub fn write_with<E>(path: &Path, fill: impl FnOnce(&mut Sink) -> Result<(), E>) -> Result<(), E>
where
    E: From<OutputError>,
{
    match classify(path)? {
        Target::Replace(target) => replace(&target, fill),
        Target::Stdout => {
            let mut sink = Sink::memory();
            fill(&mut sink)?;
            let mut out = io::stdout().lock();
            out.write_all(sink.bytes()).and_then(|_| out.flush()).map_err(|e| OutputError::io(path, e))?;
            Ok(())
        }
        Target::InPlace(target) => {
            let mut sink = Sink::memory();
            fill(&mut sink)?;
            // No truncate: a device or FIFO has nothing to truncate, and O_TRUNC on some devices
            // is an error.
            let mut file = OpenOptions::new().write(true).open(&target).map_err(|e| OutputError::io(&target, e))?;
            file.write_all(sink.bytes()).and_then(|_| file.flush()).map_err(|e| OutputError::io(&target, e))?;
            Ok(())
        }
        Target::Socket(target) => {
            let mut sink = Sink::memory();
            fill(&mut sink)?;
            write_socket(&target, sink.bytes()).map_err(|e| OutputError::io(&target, e))?;
            Ok(())
        }
    }
}

/// The writer [`write_with`] hands out: a temporary file beside a regular target, or a memory
/// buffer for targets written in place.
pub struct Sink {
    inner: SinkInner,
}

enum SinkInner {
    File(File),
    Memory(Cursor<Vec<u8>>),
}

impl Sink {
    fn memory() -> Sink {
        Sink { inner: SinkInner::Memory(Cursor::new(Vec::new())) }
    }

    fn bytes(&self) -> &[u8] {
        match &self.inner {
            SinkInner::Memory(c) => c.get_ref(),
            SinkInner::File(_) => &[],
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            SinkInner::File(f) => f.write(buf),
            SinkInner::Memory(c) => c.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            SinkInner::File(f) => f.write_all(buf),
            SinkInner::Memory(c) => c.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            SinkInner::File(f) => f.flush(),
            SinkInner::Memory(c) => c.flush(),
        }
    }
}

impl Seek for Sink {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match &mut self.inner {
            SinkInner::File(f) => f.seek(pos),
            SinkInner::Memory(c) => c.seek(pos),
        }
    }
}

/// A temporary file that removes itself unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    kept: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn replace<E>(target: &Path, fill: impl FnOnce(&mut Sink) -> Result<(), E>) -> Result<(), E>
where
    E: From<OutputError>,
{
    let (file, mut tmp) = create_temp(target)?;
    let mut sink = Sink { inner: SinkInner::File(file) };
    fill(&mut sink)?;
    let SinkInner::File(file) = sink.inner else {
        return Err(OutputError::io(target, io::Error::other("the replacement was not written to its temporary file")).into());
    };
    file.sync_all().map_err(|e| OutputError::io(&tmp.path, e))?;
    if let Ok(meta) = fs::metadata(target) {
        // Keep the replaced file's mode; a failure here leaves the temporary's default mode.
        let _ = fs::set_permissions(&tmp.path, meta.permissions());
    }
    drop(file);
    fs::rename(&tmp.path, target).map_err(|e| OutputError::io(target, e))?;
    tmp.kept = true;
    Ok(())
}

/// Creates a fresh temporary file beside `target` (never an existing one).
fn create_temp(target: &Path) -> Result<(File, TempFile), OutputError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = parent_dir(target);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".{name}.tmp{}-{n}", std::process::id()));
        match OpenOptions::new().write(true).read(true).create_new(true).open(&path) {
            Ok(f) => return Ok((f, TempFile { path, kept: false })),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(OutputError::io(target, e)),
        }
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Follows symbolic links at the end of `path` to the path they name.
fn resolve_links(path: &Path) -> Result<PathBuf, OutputError> {
    let mut cur = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&cur).map_err(|e| OutputError::io(&cur, e))?;
                cur = if link.is_absolute() { link } else { parent_dir(&cur).join(link) };
            }
            _ => return Ok(cur),
        }
    }
    Err(OutputError::LinkLoop(path.to_path_buf()))
}

#[cfg(unix)]
fn is_socket(ft: &fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    ft.is_socket()
}

#[cfg(not(unix))]
fn is_socket(_: &fs::FileType) -> bool {
    false
}

#[cfg(unix)]
fn write_socket(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut s = std::os::unix::net::UnixStream::connect(path)?;
    s.write_all(bytes)?;
    s.flush()
}

#[cfg(not(unix))]
fn write_socket(_: &Path, _: &[u8]) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "sockets are not supported on this platform"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("outfile-unit-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn regular_file_is_replaced_and_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmpdir("mode");
        let p = d.join("out.txt");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write(&p, b"new").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1, "no temporary file is left");
    }

    #[test]
    fn a_failing_fill_leaves_the_target_and_no_temporary() {
        let d = tmpdir("fail");
        let p = d.join("out.txt");
        fs::write(&p, b"old").unwrap();
        let r: Result<(), OutputError> = write_with(&p, |s| {
            s.write_all(b"partial").unwrap();
            Err(OutputError::io(&p, io::Error::other("boom")))
        });
        assert!(r.is_err());
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
    }

    #[test]
    fn classification() {
        let d = tmpdir("classify");
        assert_eq!(classify(Path::new("-")).unwrap(), Target::Stdout);
        assert!(matches!(classify(&d), Err(OutputError::IsDirectory(_))));
        assert!(matches!(classify(&d.join("no/such/x")), Err(OutputError::MissingDirectory { .. })));
        let f = d.join("f");
        assert_eq!(classify(&f).unwrap(), Target::Replace(f.clone()));
        fs::write(&f, b"").unwrap();
        let l = d.join("l");
        std::os::unix::fs::symlink("f", &l).unwrap();
        assert_eq!(classify(&l).unwrap(), Target::Replace(d.join("f")));
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink("new", &dangling).unwrap();
        assert_eq!(classify(&dangling).unwrap(), Target::Replace(d.join("new")));
        let a = d.join("a");
        let b = d.join("b");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", &b).unwrap();
        assert!(matches!(classify(&a), Err(OutputError::LinkLoop(_))));
        let ro = d.join("ro");
        fs::write(&ro, b"keep").unwrap();
        let mut perm = fs::metadata(&ro).unwrap().permissions();
        perm.set_readonly(true);
        fs::set_permissions(&ro, perm).unwrap();
        assert!(matches!(classify(&ro), Err(OutputError::ReadOnly(_))));
        assert!(write(&ro, b"x").is_err());
        assert_eq!(fs::read(&ro).unwrap(), b"keep");
    }

    #[test]
    fn a_symlink_to_a_regular_file_stays_a_symlink() {
        let d = tmpdir("link");
        let f = d.join("f");
        fs::write(&f, b"old").unwrap();
        let l = d.join("l");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        write(&l, b"new").unwrap();
        assert!(fs::symlink_metadata(&l).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&f).unwrap(), b"new");
    }

    #[test]
    fn a_socket_receives_the_bytes() {
        let d = tmpdir("sock");
        let p = d.join("s");
        let listener = std::os::unix::net::UnixListener::bind(&p).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut v = Vec::new();
            io::Read::read_to_end(&mut c, &mut v).unwrap();
            v
        });
        write(&p, b"hello").unwrap();
        assert_eq!(reader.join().unwrap(), b"hello");
        assert!(fs::symlink_metadata(&p).unwrap().file_type().is_socket_like());
    }

    trait SocketLike {
        fn is_socket_like(&self) -> bool;
    }
    impl SocketLike for fs::FileType {
        fn is_socket_like(&self) -> bool {
            is_socket(self)
        }
    }
}
