//! Images for Read: PNG, JPEG, GIF and WebP sent as image blocks, scaled down to at most
//! 2000 pixels a side and re-encoded when the file is too large for the API.

#[cfg(feature = "images")]
use std::io::Cursor;
use std::path::Path;

#[cfg(feature = "images")]
use base64::Engine as _;
#[cfg(feature = "images")]
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
#[cfg(feature = "images")]
use tool_core::ContentBlock;
use tool_core::{ToolContext, ToolError, ToolResult};

#[cfg(feature = "images")]
use crate::read_output::ImageDimensions;
use crate::read_output::ReadOutput;
#[cfg(feature = "images")]
use crate::whole_file::{read_capped, record_whole};

/// The longest side of an image sent to the model.
pub const MAX_IMAGE_SIDE: u32 = 2000;
/// The largest encoded image sent (5 MB of base64).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;
#[cfg(feature = "images")]
/// Image files above this size are refused before decoding.
const MAX_IMAGE_FILE: u64 = 100 * 1024 * 1024;

#[cfg(feature = "images")]
fn media_type(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => "image/jpeg",
    }
}

#[cfg(feature = "images")]
fn encode(img: &DynamicImage, format: ImageFormat, quality: u8) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match format {
        ImageFormat::Png => img
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .map_err(|e| e.to_string())?,
        _ => {
            let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
            rgb.write_with_encoder(encoder).map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}

#[cfg(feature = "images")]
/// Fits `img` into `side`×`side`, keeping its aspect ratio.
fn fit(img: &DynamicImage, side: u32) -> DynamicImage {
    if img.width() <= side && img.height() <= side {
        img.clone()
    } else {
        img.resize(side, side, image::imageops::FilterType::Triangle)
    }
}

#[cfg(feature = "images")]
/// An image ready to send: bytes, format, original and display dimensions.
pub(crate) type Prepared = (Vec<u8>, ImageFormat, u32, u32, u32, u32);

#[cfg(feature = "images")]
/// Decodes and, when needed, shrinks an image: returns the bytes to send, their format and
/// the display dimensions.
pub(crate) fn prepare(bytes: &[u8]) -> Result<Prepared, String> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| e.to_string())?;
    let format = reader
        .format()
        .ok_or_else(|| "the image format is not recognised".to_owned())?;
    let mut limits = Limits::default();
    limits.max_alloc = Some(1024 * 1024 * 1024);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| e.to_string())?;
    let (w, h) = (img.width(), img.height());
    let supported = matches!(
        format,
        ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP
    );
    if supported && w <= MAX_IMAGE_SIDE && h <= MAX_IMAGE_SIDE && bytes.len() <= MAX_IMAGE_BYTES {
        return Ok((bytes.to_vec(), format, w, h, w, h));
    }
    // Shrink: PNG keeps transparency and line art; everything else becomes JPEG. Smaller and
    // lower quality until it fits, the last resort being 400 px at quality 20.
    let target_format = if format == ImageFormat::Png {
        ImageFormat::Png
    } else {
        ImageFormat::Jpeg
    };
    for (side, quality, fmt) in [
        (MAX_IMAGE_SIDE, 85, target_format),
        (MAX_IMAGE_SIDE, 70, ImageFormat::Jpeg),
        (1400, 60, ImageFormat::Jpeg),
        (1000, 50, ImageFormat::Jpeg),
        (400, 20, ImageFormat::Jpeg),
    ] {
        let small = fit(&img, side);
        let out = encode(&small, fmt, quality)?;
        if out.len() <= MAX_IMAGE_BYTES {
            return Ok((out, fmt, w, h, small.width(), small.height()));
        }
    }
    Err("the image is too large even at 400 pixels".to_owned())
}

/// Without the `images` feature: the model hears that this build shows no images.
#[cfg(not(feature = "images"))]
pub(crate) fn read_image(
    _target: &Path,
    shown: &str,
    _meta: &std::fs::Metadata,
    _key: &Path,
    _ctx: &ToolContext,
) -> Result<ToolResult<ReadOutput>, ToolError> {
    Err(ToolError::respond(format!(
        "Cannot show the image {shown}: this build of the file tools has no image support (tools-fs's `images` feature is off)."
    )))
}

#[cfg(feature = "images")]
pub(crate) fn read_image(
    target: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
    key: &Path,
    ctx: &ToolContext,
) -> Result<ToolResult<ReadOutput>, ToolError> {
    let bytes = read_capped(target, MAX_IMAGE_FILE, "The image")?;
    if bytes.is_empty() {
        return Err(ToolError::respond(format!("Image file is empty: {shown}")));
    }
    let (data, format, ow, oh, dw, dh) = prepare(&bytes)
        .map_err(|e| ToolError::respond(format!("Cannot read the image {shown}: {e}")))?;
    record_whole(ctx, key, meta, &bytes);
    let media = media_type(format);
    let scaled = if (ow, oh) == (dw, dh) {
        String::new()
    } else {
        format!(", scaled to {dw}x{dh}")
    };
    let note = format!(
        "Image {shown}: {ow}x{oh} pixels{scaled}, {} bytes, sent as {media}.",
        bytes.len()
    );
    let output = ReadOutput::Image {
        file_path: shown.to_owned(),
        media_type: media.to_owned(),
        original_size: meta.len(),
        dimensions: ImageDimensions {
            original_width: ow,
            original_height: oh,
            display_width: dw,
            display_height: dh,
        },
    };
    Ok(ToolResult::ok(output)
        .with_block(ContentBlock::Image {
            media_type: media.to_owned(),
            data: base64::engine::general_purpose::STANDARD.encode(&data),
        })
        .with_text(note))
}
