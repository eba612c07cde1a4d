// Package node holds the worker nodes a coordinator knows, and their tokens.
// A token is 256 random bits; a store keeps only its SHA-256, and a
// coordinator finds a node by the hash of the token it is shown.
package node
