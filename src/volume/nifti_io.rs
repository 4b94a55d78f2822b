//! NIfTI-1 reading (.nii, .nii.gz, NIfTI pairs): the nifti crate parses the header, the voxels
//! are decoded here in one pass into the final array, and every failure is turned into an error
//! that names the file and the problem.

use super::{nifti2, Geometry, Volume};
use crate::guard::quiet_catch;
use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufRead, Read};
use std::path::Path;

/// Reads a 3-D or 4-D volume as float32 (scaling by scl_slope/scl_inter applied), decoding
/// straight from the file into the final array: peak memory is the volume plus one read
/// buffer. Rejects files that are missing, truncated, or of an unsupported type or
/// dimensionality, with an error naming the file and the problem. NaN/Inf voxels are kept:
/// whether they matter depends on the mask (see [`super::masks`]).
pub fn read_nifti(path: &Path) -> Result<Volume> {
    read_nifti_showing(path, false)
}

/// [`read_nifti`], with the read's progress on stderr where it is long (`show`; see
/// [`super::read_progress`]).
pub fn read_nifti_showing(path: &Path, show: bool) -> Result<Volume> {
    let (geom, dims, mut data) = read_into_showing(path, |x| x as f32, show)?;
    data.shrink_to_fit();
    Ok(Volume::from_flat(geom, dims[3], data))
}

/// Reads a volume decoded through `conv` (applied to each scaled voxel value), one pass: a
/// one-member .nii.gz (other tools' files) inflated in pieces on every core where that holds
/// (`gz_split`), else, and whenever the pieces fail their checks, on one core.
pub(super) fn read_into<O: Copy + Default + Send>(path: &Path, conv: impl Fn(f64) -> O + Sync) -> Result<(Geometry, [usize; 4], Vec<O>)> {
    read_into_showing(path, conv, false)
}

/// [`read_into`], with the read's progress shown where it is long (`show`, see
/// [`super::read_progress`]).
pub(super) fn read_into_showing<O: Copy + Default + Send>(path: &Path, conv: impl Fn(f64) -> O + Sync, show: bool) -> Result<(Geometry, [usize; 4], Vec<O>)> {
    match read_once(path, &conv, split_allowed(), show) {
        Err(e) if e.is::<OneCore>() => read_once(path, &conv, false, show),
        r => r,
    }
}

/// Whether a one-member .nii.gz may be inflated in pieces: with 4 or more threads, or always
/// with `NEUROPORT_GZ_SPLIT=1`, never with `=0`. A piece costs ~1.5 times one stream's work (the
/// marking inflate ~1.3x zlib-rs's time on one core, then the filling in): on the H100 host the
/// 415 MB DWI read in 0.72-0.89 s on 4 cores against 1.05-1.07 s on one, 0.40-0.50 on 8, but
/// 1.15-1.61 s on 2 against 1.01-1.12 (round 30).
pub(super) fn split_allowed() -> bool {
    match std::env::var("NEUROPORT_GZ_SPLIT").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => rayon::current_num_threads() >= 4,
    }
}

/// A split read's pieces failed their checks: read the file again on one core.
#[derive(Debug)]
pub(super) struct OneCore;

impl std::fmt::Display for OneCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the gzip pieces did not hold; read again on one core")
    }
}

impl std::error::Error for OneCore {}

/// An I/O error of a read as the user's message, or [`OneCore`] for a failed split.
fn io_error(shown: &str, e: std::io::Error, gz: bool, part: &str) -> anyhow::Error {
    if super::gz_split::is_split_failure(&e) {
        anyhow::Error::new(OneCore)
    } else {
        anyhow!("{shown}: {}", describe_io(e, gz, part))
    }
}

/// A file's geometry and grid (x, y, z, volumes) from its header alone, no voxel read: for an
/// image that gives only a grid (resample's --ref), whose voxels a whole read held for nothing
/// (and a 4-D one, refused there, was read whole first).
pub fn read_header(path: &Path) -> Result<(Geometry, [usize; 4])> {
    let o = open_header(path, false)?;
    Ok((o.geom, o.dims))
}

/// A file opened and its header read and checked.
struct Opened {
    /// The header's file (the .hdr of a pair named by its .img).
    path: std::path::PathBuf,
    /// The stream, past the header (348 bytes, NIfTI-2's 540), and whether it is gzip.
    input: (Input, bool),
    header: nifti::NiftiHeader,
    dims: [usize; 4],
    elem: &'static str,
    geom: Geometry,
    /// The header's length (348, or NIfTI-2's 540) and where the voxels start (vox_offset).
    head_len: u64,
    vox: u64,
}

fn open_header(path: &Path, split: bool) -> Result<Opened> {
    // A pair named by its .img (FSL and nibabel take either file): read it through its .hdr,
    // else the voxels would be parsed as a header.
    let pair_header = pair_header(path);
    let path = pair_header.as_deref().unwrap_or(path);
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!("{shown}: no such file"),
        Err(e) => bail!("{shown}: cannot read ({})", plain_io(&e)),
    };
    if meta.is_dir() {
        bail!("{shown}: is a folder, not a NIfTI file");
    }
    let mut input = open_maybe_gz(path, split)?;
    let gz = input.1;
    // The header first, on its own: its problems get precise messages before any data is read.
    let mut head = [0u8; 348];
    read_full(input.0.stream(), &mut head).map_err(|e| match e {
        // A file that ends before 348 bytes and does not start like a NIfTI-1 header (its
        // sizeof_hdr, 348, in either byte order) is some other file, not a truncated one: a
        // bvals file given as the image, an MRtrix .mif header.
        Short(got) if got >= 4 && ![348, 540].contains(&i32::from_le_bytes([head[0], head[1], head[2], head[3]])) && ![348, 540].contains(&i32::from_be_bytes([head[0], head[1], head[2], head[3]])) => {
            anyhow!("{shown}: not a NIfTI-1 file (only {got} bytes, and they do not start with a NIfTI header)")
        }
        // An empty file (a copy that failed, a placeholder) is said to be empty, not only cut.
        Short(0) if gz => anyhow!("{shown}: empty: the gzip data inflates to 0 bytes (truncated or never written), not a NIfTI image"),
        Short(0) => anyhow!("{shown}: empty file (0 bytes: truncated or never written), not a NIfTI image"),
        // Too short to tell by its first four bytes: a NIfTI-1 header alone is 348.
        Short(got @ 1..=3) => anyhow!("{shown}: only {got} byte{}: not a NIfTI image (truncated, or some other file; a NIfTI-1 header alone is 348 bytes)", if got == 1 { "" } else { "s" }),
        Short(_) => anyhow!("{shown}: {}", describe_io(std::io::ErrorKind::UnexpectedEof.into(), gz, "header")),
        Failed(e) => io_error(&shown.to_string(), e, gz, "header"),
    })?;
    let (header, dims, elem, geom, head_len, vox) = if nifti2::is_nifti2(&head) {
        let mut full = [0u8; nifti2::SIZE];
        full[..348].copy_from_slice(&head);
        read_full(input.0.stream(), &mut full[348..]).map_err(|e| match e {
            Short(_) => anyhow!("{shown}: {}", describe_io(std::io::ErrorKind::UnexpectedEof.into(), gz, "header")),
            Failed(e) => io_error(&shown.to_string(), e, gz, "header"),
        })?;
        let (h, vox) = nifti2::to_nifti1(&full).map_err(|e| anyhow!("{shown}: {e}"))?;
        let (dims, elem, geom) = checked(&h, &shown.to_string())?;
        (h, dims, elem, geom, nifti2::SIZE as u64, vox)
    } else {
        let (h, dims, elem, geom) = parse_header(&head, &shown.to_string(), gz)?;
        let vox = h.vox_offset.max(0.0) as u64;
        (h, dims, elem, geom, 348, vox)
    };
    Ok(Opened { path: path.to_path_buf(), input, header, dims, elem, geom, head_len, vox })
}

fn read_once<O: Copy + Default + Send>(path: &Path, conv: &(impl Fn(f64) -> O + Sync), split: bool, show: bool) -> Result<(Geometry, [usize; 4], Vec<O>)> {
    let data = open_data(path, split)?;
    let read = super::read_progress::ReadProgress::new(data.dims, data.dims.iter().product::<usize>() * data.decode.bytes, show);
    let r = decode_all(data, conv, &|b| read.advance(b));
    read.finish();
    r
}

/// The voxels of a file opened by [`open_data`], decoded through `conv`; `done(n)` as each `n`
/// bytes of them are.
pub(super) fn decode_all<O: Copy + Default + Send>(data: Data, conv: &(impl Fn(f64) -> O + Sync), done: &(dyn Fn(usize) + Sync)) -> Result<(Geometry, [usize; 4], Vec<O>)> {
    let Data { geom, dims, input: (mut input, gz), decode, shown } = data;
    let n: usize = dims.iter().product();
    let mut out = vec![O::default(); n];
    let decoded = match &mut input {
        Input::Members(m) => decode.read_members(m, &mut out, conv, done),
        // gzip data is read to its end, past the voxels the header asks for, where its CRC-32
        // and length are checked: pieces are trusted only then, and a damaged one-stream file
        // (another tool's) can inflate to the right length with wrong voxels, which only the
        // CRC tells (as gzip -t and nibabel do).
        other => {
            let r = other.stream();
            decode.read(r, &mut out, conv, done).and_then(|()| if gz { std::io::copy(r, &mut std::io::sink()).map(|_| ()) } else { Ok(()) })
        }
    };
    decoded.map_err(|e| data_error(e, &shown, gz, n * decode.bytes))?;
    Ok((geom, dims, out))
}

/// A file opened and read up to its voxels (a pair's .img opened, the extensions skipped), its
/// size checked against what the header promises: what a reader of the voxels starts from.
pub(super) struct Data {
    pub(super) geom: Geometry,
    pub(super) dims: [usize; 4],
    /// The voxels' stream and whether it is gzip.
    pub(super) input: (Input, bool),
    pub(super) decode: super::nifti_decode::Decode,
    /// The file holding the voxels, as its errors name it.
    pub(super) shown: String,
}

pub(super) fn open_data(path: &Path, split: bool) -> Result<Data> {
    let Opened { path, input, header, dims, elem, geom, head_len, vox } = open_header(path, split)?;
    let (path, shown) = (path.as_path(), path.display());
    // A single file (n+1) holds the data at vox_offset; a pair (ni1) in the .img beside the .hdr.
    let (mut data_in, data_path, skip) = if &header.magic == b"ni1\0" {
        let img = pair_image(path).ok_or_else(|| anyhow!("{shown}: a NIfTI pair header, but no .img file beside it"))?;
        let r = open_maybe_gz(&img, split)?;
        (r, img, vox)
    } else {
        let least = head_len as f32 + 4.0;
        if header.vox_offset < least || !header.vox_offset.is_finite() {
            bail!("{shown}: invalid vox_offset {} (at least {least} in a single-file NIfTI)", header.vox_offset);
        }
        (input, path.to_path_buf(), vox - head_len)
    };
    let dshown = data_path.display().to_string();
    let skipped = std::io::copy(&mut data_in.0.stream().take(skip), &mut std::io::sink())
        .map_err(|e| io_error(&dshown, e, data_in.1, "extensions"))?;
    if skipped < skip {
        bail!("{dshown}: truncated: the file ends before the data (vox_offset {})", header.vox_offset);
    }
    let n: usize = dims.iter().product();
    let decode = super::nifti_decode::Decode::of(&header, elem)?;
    fits_in_file(&data_path, data_in.1, vox, (n * decode.bytes) as u64)?;
    Ok(Data { geom, dims, input: data_in, decode, shown: dshown })
}

/// An error reading the voxels (`want` bytes of them) as the user's message naming `shown`, or
/// [`OneCore`] for a failed split.
pub(super) fn data_error(e: std::io::Error, shown: &str, gz: bool, want: usize) -> anyhow::Error {
    match e.kind() {
        _ if super::gz_split::is_split_failure(&e) => anyhow::Error::new(OneCore),
        std::io::ErrorKind::UnexpectedEof => anyhow!("{shown}: truncated: the data section ends before the {want} bytes the header promises"),
        _ => anyhow!("{shown}: {}", describe_io(e, gz, "data")),
    }
}

/// Refuses a header that promises more data than its file can hold, before the voxels are
/// allocated: a corrupt or cut header can promise terabytes (32767^4 voxels), and failing to
/// allocate them aborts the process with a backtrace instead of an error. An uncompressed file
/// must hold `offset` + `data` bytes; a gzip one cannot inflate to more than deflate's largest
/// ratio (1032:1) of its own size.
fn fits_in_file(data_path: &Path, gz: bool, offset: u64, data: u64) -> Result<()> {
    // Only a regular file says its length (a pipe, as from `<(zcat ...)`, says 0).
    let len = match std::fs::metadata(data_path) {
        Ok(m) if m.is_file() => m.len(),
        _ => return Ok(()),
    };
    let shown = data_path.display();
    if !gz && len < offset.saturating_add(data) {
        bail!("{shown}: truncated: the data section holds {} of the {data} bytes the header promises", len.saturating_sub(offset));
    }
    if gz && offset.saturating_add(data) > len.saturating_mul(1040).saturating_add(1 << 20) {
        bail!("{shown}: truncated or corrupt: the header promises {data} bytes of data, more than a {len}-byte gzip file can hold");
    }
    Ok(())
}

/// A file's 348 header bytes read: the header, its grid (x, y, z, volumes), the voxel type's
/// name and the geometry, or why neuroport cannot read the file (`shown` names it).
pub(super) fn parse_header(head: &[u8; 348], shown: &str, gz: bool) -> Result<(nifti::NiftiHeader, [usize; 4], &'static str, Geometry)> {
    let size = i32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if size == 540 || size.swap_bytes() == 540 {
        bail!("{shown}: a NIfTI-2 header (540 bytes), read by read_once, not here");
    }
    // Analyze 7.5 (SPM2, old FSL) shares NIfTI-1's size but has no magic and no defined
    // orientation; FSL and nibabel guess one (and differ), so it is named, with how to convert.
    if (size == 348 || size.swap_bytes() == 348) && ![b"n+1\0", b"ni1\0"].contains(&&[head[344], head[345], head[346], head[347]]) {
        bail!("{shown}: an Analyze 7.5 header (no NIfTI magic), whose left-right orientation is not defined: convert it to NIfTI with the orientation checked (fslchfiletype NIFTI_GZ, or nibabel)");
    }
    let header = quiet_catch(|| nifti::NiftiHeader::from_reader(&head[..]))
        .ok_or_else(|| anyhow!("{shown}: not a readable NIfTI-1 header"))?
        .map_err(|e| anyhow!("{shown}: {}", describe(e, gz, "header")))?;
    let (dims, elem, geom) = checked(&header, shown)?;
    Ok((header, dims, elem, geom))
}

/// A parsed header's grid, voxel type and geometry, or why neuroport cannot read the file.
fn checked(header: &nifti::NiftiHeader, shown: &str) -> Result<([usize; 4], &'static str, Geometry)> {
    let (dims, elem) = check_header(header).map_err(|e| anyhow!("{shown}: {e}"))?;
    let geom = geometry_of(header, [dims[0], dims[1], dims[2]]).with_context(|| format!("{shown}: bad spatial header"))?;
    super::spacing::warn(&geom, shown);
    Ok((dims, elem, geom))
}

/// The OS's message without Rust's "(os error N)" suffix.
pub fn plain_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A file's bytes: gzip members that say their lengths (ours), inflated on every core, or one
/// stream (plain, or any other gzip).
pub(super) enum Input {
    Members(super::gz_members::ParallelMembers<std::io::BufReader<std::fs::File>>),
    /// One member of another writer's, in pieces (checked only once read to its end).
    Split(Box<super::gz_split::SplitMember>),
    Stream(Box<dyn Read>),
    /// An uncompressed regular file, which a reader may also read at offsets.
    Plain(std::io::BufReader<std::fs::File>),
}

impl Input {
    pub(super) fn stream(&mut self) -> &mut dyn Read {
        match self {
            Input::Members(m) => m,
            Input::Split(r) => r.as_mut(),
            Input::Stream(r) => r.as_mut(),
            Input::Plain(r) => r,
        }
    }
}

/// A buffered reader of the file, through gzip when it starts with gzip's magic bytes (every
/// member of a multi-member file, as written by parallel compressors); with `split`, a gzip file
/// of other writers (one member) of at least [`SPLIT_MIN`] bytes is read whole and inflated in
/// pieces on every core.
fn open_maybe_gz(path: &Path, split: bool) -> Result<(Input, bool)> {
    let f = std::fs::File::open(path).map_err(|e| anyhow!("{}: cannot open ({})", path.display(), plain_io(&e)))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let magic = r.fill_buf().map_err(|e| anyhow!("{}: cannot read ({})", path.display(), plain_io(&e)))?;
    let gz = magic.len() >= 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if gz && super::gz_members::sizes(magic).is_some() {
        Ok((Input::Members(super::gz_members::ParallelMembers::new(r)), true))
    } else if gz && split && len >= SPLIT_MIN {
        let data = read_whole(r, len).map_err(|e| anyhow!("{}: cannot read ({})", path.display(), plain_io(&e)))?;
        Ok(match super::gz_split::SplitMember::new(data) {
            Ok(s) => (Input::Split(Box::new(s)), true),
            Err(data) => (Input::Stream(Box::new(flate2::bufread::MultiGzDecoder::new(std::io::Cursor::new(data)))), true),
        })
    } else if gz {
        Ok((Input::Stream(Box::new(flate2::bufread::MultiGzDecoder::new(r))), true))
    } else if path.to_string_lossy().ends_with(".gz") && !magic.is_empty() {
        bail!("{}: not gzip data (the name ends in .gz)", path.display())
    } else if r.get_ref().metadata().is_ok_and(|m| m.is_file()) {
        Ok((Input::Plain(r), false))
    } else {
        Ok((Input::Stream(Box::new(r)), false))
    }
}

/// The whole file behind `r` (`len` bytes as opened; more or fewer if it changed since), read in
/// stretches on every core where the platform reads at offsets: one core's copy from the page
/// cache into fresh pages, and the kernel's zeroing of them, held ~10 % of a split read's samples
/// on this 2-core machine (perf, round 30).
fn read_whole(mut r: std::io::BufReader<std::fs::File>, len: u64) -> std::io::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        const STRETCH: usize = 8 << 20;
        let mut data = vec![0u8; len as usize];
        let f = r.get_ref();
        data.par_chunks_mut(STRETCH).enumerate().try_for_each(|(i, c)| f.read_exact_at(c, (i * STRETCH) as u64))?;
        // A file that grew since it was opened: the rest as it comes.
        std::io::Seek::seek(&mut r, std::io::SeekFrom::Start(len))?;
        r.read_to_end(&mut data)?;
        Ok(data)
    }
    #[cfg(not(unix))]
    {
        let mut data = Vec::with_capacity(len as usize);
        r.read_to_end(&mut data)?;
        Ok(data)
    }
}

/// Smallest one-member .nii.gz inflated in pieces (a few pieces, each a task).
const SPLIT_MIN: u64 = 4 * super::gz_split::PIECE as u64;

/// Why `read_full` did not fill its buffer.
enum ReadFull {
    /// The stream ended after this many bytes.
    Short(usize),
    Failed(std::io::Error),
}
use ReadFull::{Failed, Short};

/// Fills `buf`, or says how many bytes the stream held (so a short file can be told apart from
/// a truncated header) or why it could not be read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> Result<(), ReadFull> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Err(Short(got)),
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failed(e)),
        }
    }
    Ok(())
}

/// The .hdr (or .hdr.gz) beside an .img (or .img.gz) when there is one.
fn pair_header(path: &Path) -> Option<std::path::PathBuf> {
    let s = path.to_string_lossy();
    let hdr = if let Some(b) = s.strip_suffix(".img.gz") { format!("{b}.hdr.gz") } else { format!("{}.hdr", s.strip_suffix(".img")?) };
    Some(std::path::PathBuf::from(hdr)).filter(|p| p.is_file())
}

/// The .img (or .img.gz) beside a .hdr (or .hdr.gz).
fn pair_image(path: &Path) -> Option<std::path::PathBuf> {
    let s = path.to_string_lossy();
    let img = if let Some(b) = s.strip_suffix(".hdr.gz") { format!("{b}.img.gz") } else { format!("{}.img", s.strip_suffix(".hdr")?) };
    Some(std::path::PathBuf::from(img)).filter(|p| p.exists())
}

pub(super) fn describe_io(e: std::io::Error, gz: bool, part: &str) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::UnexpectedEof => format!("truncated: the file ends inside the {part}"),
        ErrorKind::InvalidInput | ErrorKind::InvalidData if gz => format!("corrupt or truncated gzip data ({e})"),
        _ => format!("cannot read the {part} ({})", plain_io(&e)),
    }
}

/// The grid (x, y, z, volumes) and the voxel type's name, or why neuroport cannot read the file.
fn check_header(h: &nifti::NiftiHeader) -> Result<([usize; 4], &'static str)> {
    // CIFTI-2 (HCP's dtseries, dscalar, dconn...) is NIfTI-2 with intent codes 3000-3099: a
    // matrix over surface vertices and voxels, not an image on a grid.
    if (3000..3100).contains(&h.intent_code) {
        bail!("a CIFTI file (NIfTI intent code {}), grayordinate data rather than a volume image", h.intent_code);
    }
    let ndim = h.dim[0] as usize;
    if !(1..=7).contains(&ndim) {
        bail!("invalid dimension count {} in the header", h.dim[0]);
    }
    let mut dims = [1usize; 4];
    for i in 0..ndim {
        let d = h.dim[i + 1] as usize;
        if d == 0 || d > i16::MAX as usize {
            bail!("dimension {} has invalid size {} in the header", i + 1, h.dim[i + 1] as i16);
        }
        if i < 3 {
            dims[i] = d;
        } else if d != 1 {
            // ITK (SimpleITK, Slicer) writes a vector image, a DWI read from NRRD among them, as
            // x*y*z*1*N: its bytes are those of N volumes, so one axis past z is the volumes.
            if dims[3] != 1 {
                bail!("{ndim}-D volumes are not supported (only 3-D and 4-D)");
            }
            dims[3] = d;
        }
    }
    use nifti::NiftiType as T;
    let (name, bits) = match h.data_type() {
        Ok(T::Uint8) => ("uint8", 8),
        Ok(T::Int8) => ("int8", 8),
        Ok(T::Uint16) => ("uint16", 16),
        Ok(T::Int16) => ("int16", 16),
        Ok(T::Uint32) => ("uint32", 32),
        Ok(T::Int32) => ("int32", 32),
        Ok(T::Uint64) => ("uint64", 64),
        Ok(T::Int64) => ("int64", 64),
        Ok(T::Float32) => ("float32", 32),
        Ok(T::Float64) => ("float64", 64),
        Ok(other) => bail!(
            "unsupported data type {other:?} (NIfTI datatype {}): neuroport reads integer and real floating-point voxels",
            h.datatype
        ),
        Err(_) => bail!("unknown data type code {} in the header", h.datatype),
    };
    if h.bitpix != bits {
        bail!("the header is inconsistent: bitpix {} for {name} voxels ({bits} bits)", h.bitpix);
    }
    Ok((dims, name))
}

/// The nifti crate's errors in words that say what is wrong with the file.
fn describe(e: nifti::NiftiError, gz: bool, part: &str) -> String {
    use std::io::ErrorKind;
    match e {
        nifti::NiftiError::IncompatibleLength(got, want) => {
            format!("truncated: the data section holds {got} of the {want} bytes the header promises")
        }
        nifti::NiftiError::Io(io) if io.kind() == ErrorKind::UnexpectedEof => format!("truncated: the file ends inside the {part}"),
        nifti::NiftiError::Io(io) if gz && matches!(io.kind(), ErrorKind::InvalidInput | ErrorKind::InvalidData) => {
            format!("corrupt or truncated gzip data ({io})")
        }
        nifti::NiftiError::Io(io) => format!("cannot read the {part} ({io})"),
        nifti::NiftiError::InvalidFormat => "not a NIfTI-1 file (the header has no NIfTI-1 magic)".into(),
        other => format!("not a readable NIfTI-1 file ({other})"),
    }
}


/// Voxel-to-world from sform (preferred), qform, or pixdim alone, as the NIfTI standard orders them.
pub fn geometry_of(h: &nifti::NiftiHeader, dims: [usize; 3]) -> Result<Geometry> {
    let vs = [h.pixdim[1].abs(), h.pixdim[2].abs(), h.pixdim[3].abs()];
    let voxel_size = vs.map(|v| if v > 0.0 && v.is_finite() { v } else { 1.0 });
    let mut affine = [[0.0f64; 4]; 4];
    affine[3][3] = 1.0;
    if h.sform_code > 0 {
        for (r, row) in [h.srow_x, h.srow_y, h.srow_z].iter().enumerate() {
            for c in 0..4 {
                affine[r][c] = row[c] as f64;
            }
        }
    } else if h.qform_code > 0 {
        let (b, c, d) = (h.quatern_b as f64, h.quatern_c as f64, h.quatern_d as f64);
        let a = (1.0 - (b * b + c * c + d * d)).max(0.0).sqrt();
        let r = [
            [a * a + b * b - c * c - d * d, 2.0 * (b * c - a * d), 2.0 * (b * d + a * c)],
            [2.0 * (b * c + a * d), a * a + c * c - b * b - d * d, 2.0 * (c * d - a * b)],
            [2.0 * (b * d - a * c), 2.0 * (c * d + a * b), a * a + d * d - c * c - b * b],
        ];
        let qfac = if h.pixdim[0] < 0.0 { -1.0 } else { 1.0 };
        let s = [voxel_size[0] as f64, voxel_size[1] as f64, voxel_size[2] as f64 * qfac];
        for i in 0..3 {
            for j in 0..3 {
                affine[i][j] = r[i][j] * s[j];
            }
        }
        affine[0][3] = h.quatern_x as f64;
        affine[1][3] = h.quatern_y as f64;
        affine[2][3] = h.quatern_z as f64;
    } else {
        for i in 0..3 {
            affine[i][i] = voxel_size[i] as f64;
        }
    }
    if affine.iter().flatten().any(|v| !v.is_finite()) {
        bail!("the affine holds non-finite values");
    }
    let g = Geometry { dims, voxel_size, affine, header: h.clone() };
    if g.det().abs() < 1e-12 {
        bail!("the affine is singular");
    }
    Ok(g)
}

