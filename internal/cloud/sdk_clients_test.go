package cloud

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// TestSDKHandlesForward checks every handle against its SDK client: each
// exported method of the handle is a method of the client with the same
// signature (so a handle forwards, and adds nothing), and no handle
// exports the client itself (a method returning it would link every
// operation of the service again).
func TestSDKHandlesForward(t *testing.T) {
	pairs := []struct {
		handle, client reflect.Type
	}{
		{reflect.TypeOf(EC2Client{}), reflect.TypeOf(&ec2.Client{})},
		{reflect.TypeOf(S3Client{}), reflect.TypeOf(&s3.Client{})},
		{reflect.TypeOf(KMSClient{}), reflect.TypeOf(&kms.Client{})},
		{reflect.TypeOf(SageMakerClient{}), reflect.TypeOf(&sagemaker.Client{})},
		{reflect.TypeOf(SSMClient{}), reflect.TypeOf(&ssm.Client{})},
		{reflect.TypeOf(STSClient{}), reflect.TypeOf(&sts.Client{})},
		{reflect.TypeOf(AutoScalingClient{}), reflect.TypeOf(&autoscaling.Client{})},
		{reflect.TypeOf(AppAutoScalingClient{}), reflect.TypeOf(&applicationautoscaling.Client{})},
		{reflect.TypeOf(CloudWatchClient{}), reflect.TypeOf(&cloudwatch.Client{})},
		{reflect.TypeOf(SecretsManagerClient{}), reflect.TypeOf(&secretsmanager.Client{})},
		{reflect.TypeOf(EKSClient{}), reflect.TypeOf(&eks.Client{})},
		{reflect.TypeOf(IAMClient{}), reflect.TypeOf(&iam.Client{})},
	}
	ops := 0
	for _, p := range pairs {
		for i := range p.handle.NumMethod() {
			m := p.handle.Method(i)
			c, ok := p.client.MethodByName(m.Name)
			if !ok {
				t.Errorf("%s.%s: %s has no such method", p.handle.Name(), m.Name, p.client)
				continue
			}
			// Drop the receivers and compare what remains.
			if !sameSignature(m.Type, c.Type) {
				t.Errorf("%s.%s is %s, the client's is %s", p.handle.Name(), m.Name, m.Type, c.Type)
			}
			for o := range m.Type.NumOut() {
				if m.Type.Out(o) == p.client {
					t.Errorf("%s.%s returns the client: every operation would be linked", p.handle.Name(), m.Name)
				}
			}
			ops++
		}
	}
	if ops < 50 {
		t.Errorf("only %d methods forwarded: the handles do not hold what the core calls", ops)
	}
}

func sameSignature(a, b reflect.Type) bool {
	if a.NumIn() != b.NumIn() || a.NumOut() != b.NumOut() || a.IsVariadic() != b.IsVariadic() {
		return false
	}
	for i := 1; i < a.NumIn(); i++ {
		if a.In(i) != b.In(i) {
			return false
		}
	}
	for i := range a.NumOut() {
		if a.Out(i) != b.Out(i) {
			return false
		}
	}
	return true
}
