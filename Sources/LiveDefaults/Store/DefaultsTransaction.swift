import Foundation

/// The changes of one ``Defaults/transaction(inDomain:layer:reason:_:)``, made inside its closure and visible together
/// when it commits: to this process's readers and observers at once, to other processes as one version of the
/// domain's file.
///
/// ```swift
/// try defaults.transaction { tx in
///     tx[.upstreamHost] = "db2"
///     tx[.upstreamPort] = 5433
/// }
/// try defaults.transaction { tx in tx[.counter] += 1 }   // loses no increment, whoever else increments
/// ```
///
/// A transaction reads and writes one persistent domain (its ``domain``: the store's application domain or
/// suite unless another is named), in its current-user file. Reads see the value the store would show if the
/// transaction committed now: the transaction's own writes, the domain's file as it is on disk at the start
/// of the attempt (with this process's unwritten edits), forced values first, and the rest of the search list
/// below. Every key read from the domain's file is checked when the transaction commits; if anyone changed
/// one meanwhile, the closure runs again on the new version. A value that came from another domain of the
/// search list (the global domain, the registration domain) is not checked.
///
/// Use it only inside its closure: it is not `Sendable`, and once the closure returns it does nothing.
public final class DefaultsTransaction {
    /// The domain the transaction reads and writes.
    public let domain: String
    /// The store the transaction runs in (typed keys decode through it).
    let defaults: Defaults
    let file: DomainFile
    /// The domain's file at the start of the attempt, with this process's unwritten edits on top (let go by
    /// ``finish()``).
    private var base: [String: PropertyList]
    /// Whether the closure has returned: the transaction then reads nothing more and changes nothing.
    private var finished = false
    /// Key → the value written, nil for a removal.
    private(set) var writes: [String: PropertyList?] = [:]
    /// Key → the value the file had when the closure read it (nil: absent): what the commit checks.
    private(set) var reads: [String: PropertyList?] = [:]
    /// The first error met inside the closure (a value with no property-list form, a value a typed key refuses,
    /// a key of another suite): thrown when the closure returns, before anything is committed.
    private(set) var failure: DefaultsError?

    init(defaults: Defaults, domain: String, file: DomainFile, base: [String: PropertyList]) {
        self.defaults = defaults
        self.domain = domain
        self.file = file
        self.base = base
    }

    /// The keys the transaction changes so far, in no particular order.
    public var changedKeys: [String] { Array(writes.keys) }

    // MARK: Reading

    /// A key's value as the transaction sees it: its own write, else the domain's current version in its
    /// place in the search list (see ``DefaultsTransaction``); nil when no domain has it.
    public func value(forKey key: String) -> PropertyList? {
        defaults.resolve(key, replacing: file, with: fileValue(forKey: key))
    }

    /// A key's value as a Foundation object (`String`, `NSNumber`, `Date`, `Data`, arrays, dictionaries), like
    /// ``Defaults/object(forKey:)``.
    public func object(forKey key: String) -> Any? {
        value(forKey: key)?.foundationValue
    }

    /// A key's value in the domain's file itself as the transaction sees it (its own write, else the file's
    /// current version), not resolved through the search list; checked when the transaction commits, as a
    /// read. `defaults edit` compares it with what the person was shown.
    package func domainValue(forKey key: String) -> PropertyList? {
        fileValue(forKey: key)
    }

    /// The value the domain's file has for a key in this transaction, remembered for the commit's check when
    /// the transaction has not written the key itself.
    func fileValue(forKey key: String) -> PropertyList? {
        if let written = writes[key] { return written }
        let value = base[key]
        if reads[key] == nil { reads[key] = .some(value) }
        return value
    }

    // MARK: Writing

    /// Sets a key (nil removes it) when the transaction commits.
    public func set(_ value: PropertyList?, forKey key: String) {
        guard !finished else { return }
        writes[key] = .some(value)
    }

    /// Sets a key to any property-list value (`String`, numbers, `Bool`, `Date`, `Data`, `URL`, arrays and
    /// dictionaries of them), like ``Defaults/set(_:forKey:)-(Any?,_)``; a value with no property-list form
    /// makes the transaction throw ``DefaultsError/Code/notAPropertyList`` and commit nothing.
    public func set(_ value: Any?, forKey key: String) {
        guard let value else { return set(PropertyList?.none, forKey: key) }
        do throws(PropertyListError) {
            set(try Defaults.storedValue(forFoundationValue: value), forKey: key)
        } catch {
            fail(.notAPropertyList(key: key, error))
        }
    }

    /// Removes a key when the transaction commits (it then reads as a lower domain's value, or nothing).
    public func removeObject(forKey key: String) {
        set(PropertyList?.none, forKey: key)
    }

    /// Ends the transaction once its closure has returned: what to commit, and why not, if it must not.
    func finish() -> (writes: [String: PropertyList?], reads: [String: PropertyList?], failure: DefaultsError?) {
        finished = true
        base = [:]
        return (writes, reads, failure)
    }

    /// Records why the transaction must not commit (the first reason is thrown).
    func fail(_ error: DefaultsError) {
        if failure == nil { failure = error }
    }
}
