// Types of scripts/clients.mjs for the TypeScript tests that import it.

export declare const CLIENTS: string;
export declare const CLIENTS_MODULES: string;
export declare const INSTALL_CLIENTS: string;
export declare function clientVersion(pkg: string): string;
export declare function clientsMissing(): string | undefined;
