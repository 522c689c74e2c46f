//! Randomness from the operating system, for context handles and sealing keys.

/// `N` bytes from the operating system's random source.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    let mut filled = 0;
    while filled < N {
        let n = rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty())
            .map_err(std::io::Error::from)?;
        filled += n;
    }
    Ok(buf)
}
