/// Where a key's effective value comes from: the one question behind "why does my change not take?", which
/// `defaults describe` and `defaults doctor` answer for a program's own store and which a program can show
/// beside each setting (the example server's settings page does).
public enum DefaultsValueSource: Sendable, Hashable, CustomStringConvertible {
    /// A file an administrator forces (a managed layer): it wins over everything, arguments included.
    case forced(domain: String, layer: PreferenceLayer, path: String)
    /// The command line (`-Key value`, the argument domain).
    case argument
    /// An environment variable of the store's prefix (``Defaults/Configuration/environmentPrefix``), by name.
    case environmentVariable(String)
    /// The file a `_FILE` environment variable names: the variable and the file's path.
    case environmentFile(variable: String, path: String)
    /// A file of one of the store's directories of key files (``Defaults/Configuration/keyFileDirectories``).
    case keyFile(path: String)
    /// A domain's file in one of its layers (the application domain, a suite, the global domain).
    case file(domain: String, layer: PreferenceLayer, path: String)
    /// A volatile domain other than those above (a language's, one a program set), by name.
    case volatileDomain(String)
    /// The registration domain: the program's registered default.
    case registration

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String {
        switch self {
        case .forced(let domain, let layer, let path): "forced by \(domain) \(layer.rawValue) (\(path))"
        case .argument: "the command line (NSArgumentDomain)"
        case .environmentVariable(let name): "environment variable \(name)"
        case .environmentFile(let variable, let path): "the file \(path), named by environment variable \(variable)"
        case .keyFile(let path): "the key file \(path)"
        case .file(let domain, let layer, let path): "\(domain) \(layer.rawValue) (\(path))"
        case .volatileDomain(let name): "volatile domain \(name)"
        case .registration: "the registered default (NSRegistrationDomain)"
        }
    }
}

extension Defaults {
    /// Where the effective value of `key` comes from, walking the search list as reads do: forced files first,
    /// then the argument domain, the environment, the domains' files in order, the other volatile domains and
    /// the registration domain. Nil when no domain has the key.
    public func source(ofKey key: String) -> DefaultsValueSource? {
        state.withLock { state in
            let entries = state.search.entries
            for case .persistent(let name) in entries {
                for item in state.search.persistent[name]?.files ?? PersistentDomain.LayerFiles()
                where item.layer.isManaged && item.file.value(forKey: key) != nil {
                    return .forced(domain: name, layer: item.layer, path: item.file.path)
                }
            }
            for entry in entries {
                switch entry {
                case .volatile(let name):
                    guard state.volatileDomains[name]?[key] != nil else { continue }
                    switch name {
                    case DomainName.argument: return .argument
                    case DomainName.registration: return .registration
                    case DomainName.keyFiles:
                        guard let path = state.environment?.keyFileOrigins[key] else { return .volatileDomain(name) }
                        return .keyFile(path: path)
                    case DomainName.environment:
                        return state.environment?.origins[key]?.source ?? .volatileDomain(name)
                    default: return .volatileDomain(name)
                    }
                case .persistent(let name):
                    for item in state.search.persistent[name]?.files ?? PersistentDomain.LayerFiles()
                    where !item.layer.isManaged && item.file.value(forKey: key) != nil {
                        return .file(domain: name, layer: item.layer, path: item.file.path)
                    }
                }
            }
            return nil
        }
    }
}

extension EnvironmentLayer.Origin {
    /// The source a value of this origin has.
    var source: DefaultsValueSource {
        switch self {
        case .variable(let prefix, let name): .environmentVariable(prefix + name)
        case .file(let variable, let path): .environmentFile(variable: variable, path: path)
        }
    }
}
