/// A version of a domain's file, named by the digest of its bytes: the name the change log, the readers'
/// announcements, refusals and `defaults readers` give it, the same in every process that reads or writes it.
///
/// Its text (``description``) is 16 hexadecimal digits; all zeros (``noFile``) for a file that does not exist.
/// Compare the version a reader runs (``ReadingProcess/version``) with the one on disk
/// (``Defaults/versionOnDisk(inDomain:layer:)``) to tell whether it runs the file's latest; keep one as text (a
/// log line, a JSON record, a command's argument) and read it back with ``init(_:)``. Codable as that text.
public struct DomainVersion: Sendable, Hashable, Codable, LosslessStringConvertible {
    /// The digest of the file's bytes (0: no file).
    let digest: UInt64

    /// The version whose digest is `digest`.
    init(digest: UInt64) { self.digest = digest }

    /// The name of "no file": the version of a domain whose file does not exist.
    public static let noFile = DomainVersion(digest: 0)

    /// The version named by `text`, 16 hexadecimal digits as ``description`` spells it; nil for any other text.
    public init?(_ text: String) {
        guard let digest = FileVersion.number(hex: text) else { return nil }
        self.digest = digest
    }

    /// 16 hexadecimal digits, lowercase.
    public var description: String { FileVersion.hex(digest) }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let version = DomainVersion(text) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath, debugDescription: "not a version (16 hexadecimal digits): \(text)"))
        }
        self = version
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
