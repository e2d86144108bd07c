//! `inspect_image(path)`: format, PIL-style mode, size, and per-channel
//! RGB mean and standard deviation (population, rounded to 2 decimals, as
//! PIL's `ImageStat` on `convert("RGB")`).

use super::{resolve_file, str_arg};
use crate::tool::{Tool, ToolContext, ToolFamily, ToolOutput};
use async_trait::async_trait;
use image::{DynamicImage, ImageFormat, ImageReader};
use serde_json::{json, Value};

/// Inspects an image of the package.
#[derive(Debug, Clone, Copy, Default)]
pub struct InspectImage;

#[async_trait]
impl Tool for InspectImage {
    fn name(&self) -> &str {
        "inspect_image"
    }

    fn description(&self) -> &str {
        "Inspect an image of the event package: format, mode, width, height, RGB channel means and standard \
         deviations. Argument: path."
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::Research
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "default": "", "description": "(required) Package-relative or release-relative image path."}
            }
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        let path = str_arg(&args, "path").to_string();
        let ctx = ctx.clone();
        super::run_blocking("inspect_image", move || inspect(&ctx, &path)).await
    }
}

fn pil_format(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::Png => "PNG",
        ImageFormat::Gif => "GIF",
        ImageFormat::Tiff => "TIFF",
        ImageFormat::WebP => "WEBP",
        ImageFormat::Bmp => "BMP",
        _ => "UNKNOWN",
    }
}

fn pil_mode(img: &DynamicImage) -> &'static str {
    match img {
        DynamicImage::ImageLuma8(_) => "L",
        DynamicImage::ImageLumaA8(_) => "LA",
        DynamicImage::ImageRgb8(_) => "RGB",
        DynamicImage::ImageRgba8(_) => "RGBA",
        DynamicImage::ImageLuma16(_) => "I;16",
        DynamicImage::ImageRgb16(_) | DynamicImage::ImageRgb32F(_) => "RGB",
        _ => "RGBA",
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub(crate) fn inspect(ctx: &ToolContext, path: &str) -> ToolOutput {
    if path.trim().is_empty() {
        return super::tool_exception("inspect_image", "ValueError", "path is required");
    }
    let resolved = match resolve_file(ctx, "inspect_image", path) {
        Ok(r) => r,
        Err(out) => return *out,
    };
    let release_path = ctx.release_path(&resolved.package_relative);
    let failed = |message: String| {
        ToolOutput::failure(
            Value::String(format!("image inspection failed: {message}")),
            Vec::new(),
            vec![release_path.clone()],
        )
    };
    let reader = match ImageReader::open(&resolved.absolute).and_then(|r| r.with_guessed_format()) {
        Ok(r) => r,
        Err(e) => return failed(format!("OSError: {e}")),
    };
    let Some(format) = reader.format() else {
        return failed(format!(
            "UnidentifiedImageError: cannot identify image file '{release_path}'"
        ));
    };
    let img = match reader.decode() {
        Ok(img) => img,
        Err(e) => return failed(format!("OSError: {e}")),
    };
    let mode = if format == ImageFormat::Gif {
        "P"
    } else {
        pil_mode(&img)
    };
    let rgb = img.to_rgb8();
    let n = (rgb.width() as f64) * (rgb.height() as f64);
    let mut sum = [0f64; 3];
    let mut sum2 = [0f64; 3];
    for px in rgb.pixels() {
        for c in 0..3 {
            let v = f64::from(px.0[c]);
            sum[c] += v;
            sum2[c] += v * v;
        }
    }
    let mut mean = [0f64; 3];
    let mut std = [0f64; 3];
    if n > 0.0 {
        for c in 0..3 {
            mean[c] = sum[c] / n;
            std[c] = (sum2[c] / n - mean[c] * mean[c]).max(0.0).sqrt();
        }
    }
    ToolOutput::ok(
        json!({
            "path": release_path,
            "format": pil_format(format),
            "mode": mode,
            "width": img.width(),
            "height": img.height(),
            "rgb_mean": mean.iter().map(|&m| round2(m)).collect::<Vec<_>>(),
            "rgb_stddev": std.iter().map(|&s| round2(s)).collect::<Vec<_>>(),
        }),
        vec![release_path.clone()],
    )
}
