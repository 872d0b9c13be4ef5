//! The demo agent looks at the images a prompt carries the way a model would receive them:
//! base64 that decodes to a PNG, JPEG, GIF or WebP of the declared type. Its answer says what
//! it got (`I see an image (png, 1234 bytes).`), so tests and users can tell an image arrived
//! whole through agentty and the protocol.

use base64::Engine;

use crate::attachment::ImageMime;

/// One sentence per image, `(declared media type, base64 data)`; `None` when there are none.
pub(crate) fn acknowledge<'a>(
    images: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<String> {
    let sentences: Vec<String> = images
        .into_iter()
        .map(|(declared, data)| {
            let decoded = base64::engine::general_purpose::STANDARD.decode(data.trim());
            match decoded {
                Ok(bytes) => match ImageMime::sniff(&bytes) {
                    Some(mime) if mime.media_type() == declared => format!(
                        "I see an image ({}, {} bytes).",
                        mime.short_name(),
                        bytes.len()
                    ),
                    _ => format!("I got an image I cannot read (declared {declared})."),
                },
                Err(_) => format!("I got an image that is not base64 (declared {declared})."),
            }
        })
        .collect();
    (!sentences.is_empty()).then(|| sentences.join(" "))
}

/// The media type and base64 data of a `data:` URL (Codex's image input).
pub(crate) fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (media_type, data) = rest.split_once(";base64,")?;
    Some((media_type, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_acknowledged_by_what_their_bytes_are() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n0123");
        assert_eq!(
            acknowledge([("image/png", png.as_str())]).as_deref(),
            Some("I see an image (png, 12 bytes).")
        );
        assert_eq!(
            acknowledge([("image/jpeg", png.as_str())]).as_deref(),
            Some("I got an image I cannot read (declared image/jpeg).")
        );
        assert_eq!(acknowledge([]), None);
        assert_eq!(
            data_url("data:image/png;base64,AAAA"),
            Some(("image/png", "AAAA"))
        );
    }
}
