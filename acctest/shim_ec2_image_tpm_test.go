package acctest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// TestImageTPMDouble: an image tagged shim:tpm-support is described with
// TpmSupport, as EC2 describes an image registered with NitroTPM; others,
// and every image once the emulator is reset, without it, as moto alone
// describes them all.
func TestImageTPMDouble(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	c, err := h.Clients(ctx, Region)
	if err != nil {
		t.Fatal(err)
	}
	ec2c := EC2(c)
	imgs, err := ec2c.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(imgs.Images) < 2 {
		t.Fatalf("images: %v (%d)", err, len(imgs.Images))
	}
	for _, im := range imgs.Images {
		if im.TpmSupport != "" {
			t.Fatalf("moto describes %s with TpmSupport %q: is the double still needed?", aws.ToString(im.ImageId), im.TpmSupport)
		}
	}
	tpm, plain := aws.ToString(imgs.Images[0].ImageId), aws.ToString(imgs.Images[1].ImageId)
	if _, err := ec2c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{tpm}, Tags: []ec2types.Tag{{Key: aws.String(ImageTPMSupportTag), Value: aws.String("v2.0")}}}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{tpm: "v2.0", plain: ""} {
		im, err := cloud.ResolveImage(ctx, c.EC2, c.SSM, id)
		if err != nil {
			t.Fatal(err)
		}
		if im.TPMSupport != want {
			t.Errorf("%s: TpmSupport %q, want %q", id, im.TPMSupport, want)
		}
	}
	if err := h.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if im, err := cloud.ResolveImage(ctx, c.EC2, c.SSM, tpm); err != nil || im.TPMSupport != "" {
		t.Errorf("after reset: %+v %v", im, err)
	}
}
