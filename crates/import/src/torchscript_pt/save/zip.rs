//! The zip container of a saved TorchScript archive: every record stored uncompressed, its data
//! at a file offset that is a multiple of 64 (padded with an `FB` extra field in the local
//! header, as PyTorch's own writer pads), a fixed timestamp and no data descriptors, so that the
//! same records always give the same bytes.

/// Record data starts at a multiple of this many bytes (so storages can be mapped in place).
pub(super) const ALIGNMENT: usize = 64;

/// The DOS date and time of every record: 1980-01-01 00:00:00, the earliest zip can say.
const DOS_TIME: u16 = 0;
const DOS_DATE: u16 = (1 << 5) | 1;
/// Version needed to extract a stored record: 2.0.
const VERSION: u16 = 20;
/// The id of the padding extra field (`FB`, little-endian).
const PAD_ID: u16 = u16::from_le_bytes(*b"FB");
const LOCAL_HEADER: usize = 30;

/// Writes the records in the order given. Fails when the archive would need zip64 (a record or
/// the whole archive of 4 GiB or more, or more than 65535 records).
pub(super) struct ZipBuilder {
    out: Vec<u8>,
    central: Vec<u8>,
    count: usize,
}

impl ZipBuilder {
    pub(super) fn new() -> ZipBuilder {
        ZipBuilder {
            out: Vec::new(),
            central: Vec::new(),
            count: 0,
        }
    }

    /// Appends the record `name` holding `data`.
    pub(super) fn add(&mut self, name: &str, data: &[u8]) -> Result<(), String> {
        let too_big = || format!("record `{name}` would put the archive past 4 GiB, which needs zip64 (not written)");
        let offset = u32::try_from(self.out.len()).map_err(|_| too_big())?;
        let size = u32::try_from(data.len()).map_err(|_| too_big())?;
        let name_len = u16::try_from(name.len()).map_err(|_| format!("record name `{name}` is too long"))?;
        let crc = crc32fast::hash(data);
        // The extra field needs at least its 4-byte header, so the padding is 4..68 bytes.
        let unpadded = self.out.len() + LOCAL_HEADER + name.len() + 4;
        let pad = (ALIGNMENT - unpadded % ALIGNMENT) % ALIGNMENT;
        let mut extra = Vec::with_capacity(4 + pad);
        extra.extend_from_slice(&PAD_ID.to_le_bytes());
        extra.extend_from_slice(&(pad as u16).to_le_bytes());
        extra.resize(4 + pad, b'Z');

        let out = &mut self.out;
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        header_fields(out, crc, size, name_len, extra.len() as u16);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&extra);
        debug_assert_eq!(out.len() % ALIGNMENT, 0);
        out.extend_from_slice(data);
        if self.out.len() > u32::MAX as usize {
            return Err(too_big());
        }

        let c = &mut self.central;
        c.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        put16(c, VERSION); // made by
        header_fields(c, crc, size, name_len, 0);
        put16(c, 0); // comment
        put16(c, 0); // disk
        put16(c, 0); // internal attributes
        c.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        c.extend_from_slice(&offset.to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        self.count += 1;
        Ok(())
    }

    /// The archive: the records, the central directory and its end record.
    pub(super) fn finish(mut self) -> Result<Vec<u8>, String> {
        let count = u16::try_from(self.count).map_err(|_| "more than 65535 records need zip64 (not written)".to_string())?;
        let start = u32::try_from(self.out.len()).map_err(|_| "the archive would pass 4 GiB, which needs zip64 (not written)".to_string())?;
        let size = self.central.len() as u32;
        self.out.extend_from_slice(&self.central);
        let out = &mut self.out;
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        put16(out, 0);
        put16(out, 0);
        put16(out, count);
        put16(out, count);
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&start.to_le_bytes());
        put16(out, 0);
        Ok(self.out)
    }
}

/// The fields the local header and the central directory share, from "version needed" to the
/// extra field's length: a stored record without flags, dated [`DOS_DATE`].
fn header_fields(out: &mut Vec<u8>, crc: u32, size: u32, name_len: u16, extra_len: u16) {
    put16(out, VERSION);
    put16(out, 0); // flags
    put16(out, 0); // stored
    put16(out, DOS_TIME);
    put16(out, DOS_DATE);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes()); // compressed
    out.extend_from_slice(&size.to_le_bytes());
    put16(out, name_len);
    put16(out, extra_len);
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn records_read_back_aligned_and_stored() {
        let mut z = ZipBuilder::new();
        z.add("m/data/0", &[1, 2, 3, 4]).unwrap();
        z.add("m/data.pkl", b"\x80\x02N.").unwrap();
        z.add("m/a-much-longer-record-name/that/crosses/the/alignment", &[7; 100]).unwrap();
        let bytes = z.finish().unwrap();
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).unwrap();
        assert_eq!(zip.len(), 3);
        let names: Vec<String> = zip.file_names().map(str::to_owned).collect();
        let mut expect = vec!["m/data/0", "m/data.pkl", "m/a-much-longer-record-name/that/crosses/the/alignment"];
        let mut got: Vec<&str> = names.iter().map(String::as_str).collect();
        expect.sort();
        got.sort();
        assert_eq!(got, expect);
        for (name, want) in [("m/data/0", vec![1u8, 2, 3, 4]), ("m/data.pkl", b"\x80\x02N.".to_vec()), ("m/a-much-longer-record-name/that/crosses/the/alignment", vec![7; 100])] {
            let mut f = zip.by_name(name).unwrap();
            assert_eq!(f.compression(), zip::CompressionMethod::Stored);
            assert_eq!(f.data_start() % ALIGNMENT as u64, 0, "{name}");
            let mut got = Vec::new();
            f.read_to_end(&mut got).unwrap();
            assert_eq!(got, want, "{name}");
        }
    }
}
