import Glibc

/// Buffered output to a file descriptor (stdout for printed values).
///
/// Values are appended to a buffer and written with `write(2)` when it grows past a threshold
/// or on `flush()`, which callers do before they block waiting for more input, so live output
/// is never held back. A failed write (EPIPE when the reader went away) is remembered in
/// `failed`; later writes are dropped. One thread only.
final class FileDescriptorWriter {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let threshold = 64 * 1024
    private(set) var failed = false

    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(threshold + 4096)
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= threshold { flush() }
    }

    func append(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= threshold { flush() }
    }

    func append(byte: UInt8) { buffer.append(byte) }

    func flush() {
        guard !buffer.isEmpty else { return }
        if !failed {
            let ok = buffer.withUnsafeBytes { FileDescriptorWriter.writeAll(fd, $0) }
            if !ok { failed = true }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes every byte, retrying after EINTR and short writes; false on any other error.
    @discardableResult
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
