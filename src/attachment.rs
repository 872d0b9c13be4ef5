//! Images attached to a prompt: what a file the user named is (by its magic bytes, never its
//! extension), the limits it must meet, and how it is sent and recorded.
//!
//! An image is read once, when the user attaches it; the bytes travel with the prompt (and its
//! retries) so that every attempt sends the very image the composer showed, whatever happens to
//! the file meanwhile. Session logs keep its path, type, size and hash, never the bytes.
//! This module reads only the path it is given: which paths those are is the app's business
//! (a paste, Ctrl+V, an `@` mention: always the user's own).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The size cap when the config sets none (`image_max_bytes`).
pub const DEFAULT_MAX_BYTES: u64 = 5 * 1024 * 1024;

/// The image formats the agents' models take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ImageMime {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageMime {
    /// The format of `bytes`, from its magic bytes; `None` for anything else.
    pub(crate) fn sniff(bytes: &[u8]) -> Option<ImageMime> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageMime::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageMime::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageMime::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageMime::Webp)
        } else {
            None
        }
    }

    /// The media type (`image/png`).
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            ImageMime::Png => "image/png",
            ImageMime::Jpeg => "image/jpeg",
            ImageMime::Gif => "image/gif",
            ImageMime::Webp => "image/webp",
        }
    }

    /// The short name (`png`).
    pub(crate) fn short_name(self) -> &'static str {
        match self {
            ImageMime::Png => "png",
            ImageMime::Jpeg => "jpeg",
            ImageMime::Gif => "gif",
            ImageMime::Webp => "webp",
        }
    }
}

/// An image read from a file the user named, ready to send.
#[derive(Clone, PartialEq, Eq)]
pub struct ImageAttachment {
    /// The file it was read from (absolute).
    pub(crate) path: PathBuf,
    pub(crate) mime: ImageMime,
    pub bytes: Arc<[u8]>,
    /// xxh3-128 of the bytes, in hex: what the log keeps to tell the image again.
    pub(crate) hash: String,
}

impl fmt::Debug for ImageAttachment {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ImageAttachment")
            .field("path", &self.path)
            .field("mime", &self.mime)
            .field("size", &self.bytes.len())
            .field("hash", &self.hash)
            .finish()
    }
}

/// What a session log keeps of an attached image: never the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRecord {
    pub path: String,
    pub mime: String,
    pub size: u64,
    pub(crate) hash: String,
}

impl ImageAttachment {
    /// An image from bytes already in hand (`path` is where they came from).
    pub(crate) fn from_bytes(path: PathBuf, bytes: Vec<u8>) -> Result<ImageAttachment, String> {
        let mime = ImageMime::sniff(&bytes)
            .ok_or_else(|| format!("{} is not a PNG, JPEG, GIF or WebP image", file_name(&path)))?;
        let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes));
        Ok(ImageAttachment {
            path,
            mime,
            bytes: bytes.into(),
            hash,
        })
    }

    pub(crate) fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The bytes in standard base64 (what every protocol's image block carries).
    pub fn base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.bytes)
    }

    /// A `data:` URL of the image (Codex's image input).
    pub(crate) fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime.media_type(), self.base64())
    }

    /// How the composer and the transcript show it: `[image: shot.png 120 KB]`.
    pub(crate) fn label(&self) -> String {
        format!(
            "[image: {} {}]",
            file_name(&self.path),
            human_size(self.size())
        )
    }

    /// What the session log keeps of it.
    pub(crate) fn record(&self) -> ImageRecord {
        ImageRecord {
            path: self.path.display().to_string(),
            mime: self.mime.media_type().to_owned(),
            size: self.size(),
            hash: self.hash.clone(),
        }
    }
}

/// Reads the image at `path` (already resolved), within `max_bytes`; one clear sentence when
/// it cannot be attached.
pub fn load(path: &Path, max_bytes: u64) -> Result<ImageAttachment, String> {
    let shown = path.display();
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("No image attached: there is no file {shown}"));
        }
        Err(error) => return Err(format!("No image attached: cannot read {shown}: {error}")),
    };
    if !metadata.is_file() {
        return Err(format!("No image attached: {shown} is not a file"));
    }
    let too_big = |size: u64| {
        format!(
            "No image attached: {} is {}, over the {} limit (image_max_bytes in the config)",
            file_name(path),
            human_size(size),
            human_size(max_bytes)
        )
    };
    if metadata.len() > max_bytes {
        return Err(too_big(metadata.len()));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    let read = std::fs::File::open(path)
        // One byte past the cap tells a file that grew since its metadata was read.
        .and_then(|file| file.take(max_bytes + 1).read_to_end(&mut bytes));
    if let Err(error) = read {
        return Err(format!("No image attached: cannot read {shown}: {error}"));
    }
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    ImageAttachment::from_bytes(path.to_path_buf(), bytes)
        .map_err(|why| format!("No image attached: {why}"))
}

/// The file a pasted text names, when the paste is one path (or `file://` URL) to what looks
/// like an image by its name: a terminal's drag and drop, a copied path. Quotes and the
/// backslashes a shell escapes spaces with are taken off. The file is not looked at here.
pub(crate) fn pasted_image_path(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|quote| {
            text.strip_prefix(*quote)
                .and_then(|rest| rest.strip_suffix(*quote))
        })
        .unwrap_or(text);
    let path = match unquoted.strip_prefix("file://") {
        Some(url) => percent_decode(url),
        None => unquoted.replace("\\ ", " "),
    };
    has_image_name(&path).then_some(path)
}

/// Whether `path` ends in an image format's extension (the cue to look at the file's bytes).
pub(crate) fn has_image_name(path: &str) -> bool {
    let Some((_, extension)) = path.rsplit_once('.') else {
        return false;
    };
    ["png", "jpg", "jpeg", "gif", "webp"]
        .iter()
        .any(|known| extension.eq_ignore_ascii_case(known))
}

/// The file `typed` names: `~/` is the home folder, a relative path is under `cwd`.
pub(crate) fn resolve(typed: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    if let (Some(rest), Some(home)) = (typed.strip_prefix("~/"), home) {
        return home.join(rest);
    }
    cwd.join(typed)
}

/// `%20` and the like in a `file://` URL.
fn percent_decode(url: &str) -> String {
    let bytes = url.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                index += 3;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// `812 B`, `120 KB`, `4.2 MB`.
pub(crate) fn human_size(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * 1024;
    if bytes < KB {
        format!("{bytes} B")
    } else if bytes < MB {
        format!("{} KB", (bytes + KB / 2) / KB)
    } else {
        format!("{:.1} MB", bytes as f64 / MB as f64)
    }
}

/// An 11-byte PNG (its signature and `img`), base64 `iVBORw0KGgppbWc=`: what request-building
/// tests send.
#[cfg(test)]
pub(crate) fn sample_png() -> ImageAttachment {
    ImageAttachment::from_bytes("/work/shot.png".into(), b"\x89PNG\r\n\x1a\nimg".to_vec())
        .expect("a PNG signature")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest PNG header (what sniffing reads), then filler.
    pub(crate) fn png_bytes(len: usize) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.resize(len.max(8), 7);
        bytes
    }

    #[test]
    fn the_format_comes_from_the_bytes_not_the_name() {
        assert_eq!(ImageMime::sniff(&png_bytes(20)), Some(ImageMime::Png));
        assert_eq!(
            ImageMime::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageMime::Jpeg)
        );
        assert_eq!(ImageMime::sniff(b"GIF89a...."), Some(ImageMime::Gif));
        assert_eq!(
            ImageMime::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(ImageMime::Webp)
        );
        assert_eq!(ImageMime::sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(ImageMime::sniff(b"hello"), None);

        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("fake.png");
        std::fs::write(&fake, "not an image").unwrap();
        let why = load(&fake, DEFAULT_MAX_BYTES).unwrap_err();
        assert!(
            why.contains("fake.png is not a PNG, JPEG, GIF or WebP"),
            "{why}"
        );
        let real = dir.path().join("shot.dat");
        std::fs::write(&real, png_bytes(1234)).unwrap();
        let image = load(&real, DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(image.mime, ImageMime::Png);
        assert_eq!(image.size(), 1234);
        assert_eq!(image.label(), "[image: shot.dat 1 KB]");
        assert_eq!(image.record().mime, "image/png");
        assert_eq!(image.hash.len(), 32);
    }

    #[test]
    fn a_missing_file_a_folder_and_an_oversized_file_are_each_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let missing = load(&dir.path().join("gone.png"), DEFAULT_MAX_BYTES).unwrap_err();
        assert!(missing.contains("there is no file"), "{missing}");
        let folder = load(dir.path(), DEFAULT_MAX_BYTES).unwrap_err();
        assert!(folder.contains("is not a file"), "{folder}");
        let big = dir.path().join("big.png");
        std::fs::write(&big, png_bytes(3000)).unwrap();
        let why = load(&big, 2048).unwrap_err();
        assert_eq!(
            why,
            "No image attached: big.png is 3 KB, over the 2 KB limit (image_max_bytes in the config)"
        );
    }

    #[test]
    fn a_pasted_path_is_recognised_with_its_quotes_escapes_and_url_form() {
        assert_eq!(pasted_image_path("/tmp/a.png\n"), Some("/tmp/a.png".into()));
        assert_eq!(
            pasted_image_path("'/tmp/my shot.JPG'"),
            Some("/tmp/my shot.JPG".into())
        );
        assert_eq!(
            pasted_image_path("/tmp/my\\ shot.webp"),
            Some("/tmp/my shot.webp".into())
        );
        assert_eq!(
            pasted_image_path("file:///tmp/my%20shot.gif"),
            Some("/tmp/my shot.gif".into())
        );
        assert_eq!(pasted_image_path("/tmp/notes.txt"), None);
        assert_eq!(pasted_image_path("a.png\nb.png"), None);
        assert_eq!(pasted_image_path(""), None);
        let home = Path::new("/home/u");
        assert_eq!(
            resolve("~/a.png", Path::new("/w"), Some(home)),
            PathBuf::from("/home/u/a.png")
        );
        assert_eq!(
            resolve("a.png", Path::new("/w"), Some(home)),
            PathBuf::from("/w/a.png")
        );
        assert_eq!(
            resolve("/abs.png", Path::new("/w"), None),
            PathBuf::from("/abs.png")
        );
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_size(812), "812 B");
        assert_eq!(human_size(120 * 1024), "120 KB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MB");
    }
}
