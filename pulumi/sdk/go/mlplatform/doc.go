// Provision AI/ML infrastructure on AWS (GPU training clusters, feature stores) with data residency enforced at preview time.
package mlplatform
